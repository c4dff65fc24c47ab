#pragma once
// @brief The planner: for each candidate (a base run x one value of each search key), the fewest
// replicas meeting the SLOs, found from an analytic lower bound by exponential then binary
// search over probes; candidates that cannot beat the best so far are pruned. Decisions are
// made in rounds over a fixed number of candidates side by side, so the result does not depend
// on how many workers run the probes, nor on which probes came from the cache.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "plan/plan_config.h"
#include "plan/probe.h"
#include "plan/probe_cache.h"

namespace inferscale::plan {

struct Candidate {
  std::size_t index = 0;
  std::string run;                  // the base experiment's run
  std::vector<std::string> values;  // one per search key (YAML text)
  std::vector<std::string> sets;    // "key=value", applied like --set
  std::string label;
  // Resolved from the candidate's configuration (at one replica).
  std::string infeasible;  // why it cannot run (a store that does not fit, ...); empty: runs
  std::string gpu, mode;
  std::uint32_t tp = 1;
  double price_per_gpu_hour = 0;
  /// The run at one replica with the plan's price: what fleet_cost (sim/cost.h) prices at any
  /// size, as summary.json's cost_usd does.
  std::shared_ptr<const RunConfig> priced;
  std::uint64_t store_bytes_per_gpu = 0, host_bytes_per_replica = 0;
  std::uint64_t kv_bytes_per_token_per_gpu = 0;
  std::uint32_t lower_bound = 1;  // analytic: replicas below it cannot carry the load
};

enum class Status { kOk, kPruned, kInfeasible, kOverMax };
const char* to_string(Status s);

struct ProbeRecord {
  ProbeSpec spec;
  ProbeResult result;
  std::string key;
};

struct CandidateResult {
  Status status = Status::kInfeasible;
  std::uint32_t replicas = 0;         // the answer (kOk)
  std::uint32_t gpus = 0;             // billed: whole nodes with a node preset
  double cost_per_hour = 0;           // fleet_cost at the answer: GPUs and the tiers below them
  double users_per_gpu = 0;           // at the plan's load
  double users_per_gpu_capacity = 0;  // at headroom_lower: what most_users_per_gpu ranks
  /// The headroom's bracket at the answer: the highest load factor found to pass (>= 1, a lower
  /// bound on the load it meets) and the lowest found to fail (an upper bound; 0 when no
  /// headroom probe failed, so only the unprobed ceiling answer / (answer - 1) bounds it).
  double headroom_lower = 0;
  double headroom_upper = 0;
  bool non_monotone = false;
  ProbeResult at_answer;
  std::uint32_t probes = 0;
  std::string note;
};

struct PlanOutcome {
  std::vector<Candidate> candidates;
  std::vector<CandidateResult> results;  // by candidate index
  std::vector<ProbeRecord> probes;       // in the order the planner asked for them
  std::uint64_t probes_run = 0, probes_cached = 0, probes_stopped_early = 0;
  double probe_wall_s = 0;  // summed over the probes run (not cached)
  double population_fact_tokens = 0;
};

struct PlanOptions {
  unsigned jobs = 1;
  bool resume = false;
  std::optional<std::uint64_t> users;  // overrides load.users (capacity curves)
  bool quiet = false;
};

/// Runs the plan's search. Probes run on `runner`; results go through `cache` (read only
/// with opts.resume; always written).
PlanOutcome run_plan(const PlanConfig& plan, const PlanOptions& opts, ProbeRunner& runner,
                     const ProbeCache& cache);

/// One probe resolved for running: candidate `c`'s run with the probe's overrides, its trace,
/// window, SLOs and cache key. Uses c.run, c.sets and the store sizes of `c`; reads YAML. What
/// the planner asks its runner for, and what a distributed worker rebuilds from the same inputs.
ProbeTask make_probe_task(const PlanConfig& plan, const Candidate& c, std::uint64_t users,
                          const ProbeSpec& spec);

/// The requests of a probe's trace: the rate x (warm-up + window + cool-down), or the replay's
/// rows within that span.
std::uint64_t probe_requests(const PlanConfig& plan, std::uint64_t users, double factor);

/// The `--set` overrides of a probe: the plan's load for `users` x `factor` (a generated trace
/// of the warm-up, window and cool-down; with load.trace locomo or file, the source re-sized
/// and re-timed into `<out>/<plan>/.traces/`, written there once), `replicas`, and outputs off.
std::vector<std::string> probe_overrides(const PlanConfig& plan, std::uint64_t users, double factor,
                                         std::uint32_t replicas);

/// The score the objective minimizes (cost per hour, GPUs, or minus users per GPU).
double objective_score(const PlanConfig& plan, const CandidateResult& r);

/// What candidate `c` costs per hour at `replicas` (fleet_cost of its priced run).
double candidate_cost_per_hour(const Candidate& c, std::uint32_t replicas);

}  // namespace inferscale::plan
