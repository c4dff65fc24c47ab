#include "sim/cost.h"

namespace inferscale {

namespace {

constexpr double kHoursPerMonth = 730;

/// A tier's capacity over the fleet: one per node for host and disk, one shared remote store.
TierCost tier_cost(const RunConfig& run, const TierConfig& t, std::uint64_t instances) {
  TierCost c;
  if (!t.enabled || run.serving.mode != ServingMode::kKvInject) return c;
  c.priced = true;
  c.capacity_gb = double(t.capacity_bytes) * double(instances) / 1e9;
  c.per_gb_month = t.price_per_gb_month;
  c.per_hour = c.capacity_gb * t.price_per_gb_month / kHoursPerMonth;
  return c;
}

FleetCost cost_of(const RunConfig& run, std::uint32_t replicas, std::uint32_t nodes) {
  FleetCost c;
  c.gpus = run.gpus_billed(replicas, nodes);
  c.gpu_per_hour = run.prices.gpu_per_hour;
  c.gpus_per_hour = double(c.gpus) * c.gpu_per_hour;
  c.host = tier_cost(run, run.store.host, nodes);
  c.disk = tier_cost(run, run.store.disk, nodes);
  c.remote = tier_cost(run, run.store.remote, 1);
  c.per_hour = c.gpus_per_hour + c.host.per_hour + c.disk.per_hour + c.remote.per_hour;
  return c;
}

}  // namespace

FleetCost fleet_cost(const RunConfig& run) {
  return cost_of(run, run.replicas, run.nodes);
}

FleetCost fleet_cost(const RunConfig& run, std::uint32_t replicas) {
  return cost_of(run, replicas, run.nodes_for(replicas));
}

}  // namespace inferscale
