#pragma once
// @brief The fleet's keys of an experiment: `node` (a preset of configs/nodes/ or an inline
// map), `nodes`, `prices`, and the checks and defaults that tie the store's tiers to the node's
// hardware (capacities, bandwidths, write policies). Private to sim/config/.

#include "sim/config/experiment.h"

namespace inferscale {

/// `node: name` (preset), `node: path.yaml`, an inline map, or none (NodeConfig{}).
NodeConfig node_of(const YamlView& top);
/// The extra keys of the disk and remote tiers and the write policy of any tier, read from
/// `tier` (store.<key>), with the node's figures as defaults.
void parse_tier_fleet_keys(const YamlView& tier, const char* key, const NodeConfig& node,
                           TierConfig& t);
/// Defaults and checks that need the whole store and the node: write policies (kBack where a
/// tier lies below, an error for a write policy with none), capacities within the node's
/// hardware, bandwidths given where no node gives them; the node count and replica count.
void resolve_fleet(const YamlView& top, RunConfig& r);

}  // namespace inferscale
