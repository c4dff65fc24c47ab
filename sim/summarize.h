#pragma once
// @brief summarize_run: a run's RunSummary from its metrics and the fleet's replicas and node
// tiers (their statistics added up, peaks the largest instance's).

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "sim/metrics.h"
#include "sim/node_store.h"
#include "sim/replica.h"
#include "sim/simulator.h"

namespace inferscale {

/// What a run's summary reads: its metrics, the fleet's replicas and node tiers (not const: a
/// summary first frees the records no tier holds, so that its counts of them are exact), which
/// replicas this part of a partitioned run owns, and the simulator's own counts.
struct SummaryInputs {
  const RunConfig& cfg;
  Metrics& metrics;  // not const: its latencies are sorted for the percentiles
  const SimOutputs& outputs;
  std::vector<std::unique_ptr<Replica>>& replicas;
  std::vector<std::unique_ptr<NodeStore>>& nodes;
  std::function<bool(int replica)> owned;
  std::uint64_t events = 0;
  std::uint64_t facts = 0;  // declared, or the population's when larger
  std::uint64_t users = 0;  // distinct users seen
  double wall_s = 0;
  std::uint64_t fused_steps = 0, decode_run_steps = 0, windows = 0;
};

RunSummary summarize_run(const SummaryInputs& in);

}  // namespace inferscale
