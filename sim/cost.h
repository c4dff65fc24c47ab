#pragma once
// @brief What a fleet costs per hour: the GPUs billed by the hour plus each tier below the GPU by
// its provisioned capacity. The one definition behind summary.json's `cost_usd` and the
// planner's cost of a candidate (docs/tiers.md, "Costs").

#include <cstdint>

#include "sim/config/experiment.h"

namespace inferscale {

/// One tier below the GPU, priced by its capacity over the fleet.
struct TierCost {
  bool priced = false;  // enabled in a kv_inject run
  double capacity_gb = 0;
  double per_gb_month = 0;
  double per_hour = 0;
};

struct FleetCost {
  std::uint64_t gpus = 0;  // billed: whole nodes with a node preset, else replicas x tp
  double gpu_per_hour = 0;
  double gpus_per_hour = 0;
  TierCost host, disk, remote;
  double per_hour = 0;  // the GPUs and the tiers
};

/// The cost of `run` as configured: its replicas and nodes, its prices.
FleetCost fleet_cost(const RunConfig& run);
/// The cost of `run` resized to `replicas` (nodes follow as RunConfig::nodes_for says).
FleetCost fleet_cost(const RunConfig& run, std::uint32_t replicas);

}  // namespace inferscale
