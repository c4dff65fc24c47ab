#pragma once
// @brief A capacity plan: a base experiment, the population and its load, the SLOs, the search
// space over config keys and the objective (docs/plan.md is the reference). Every error is an
// InputError at file:line:column with the key path.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace inferscale {
struct SourceTrace;
}

namespace inferscale::plan {

/// One SLO: the `share` of the measured requests whose `metric` (ttft, tpot, e2e) is at most
/// `max_ms`; `p99: 500` is share 0.99 (nearest rank, as summary.json's percentiles).
struct SloTarget {
  std::string metric;  // ttft | tpot | e2e
  double share = 0.99;
  double max_ms = 0;
  std::string label;  // "ttft_p99_ms", the column name
};

/// One key of the search space: the values it takes, each applied like `--set key=value`.
struct SearchAxis {
  std::string key;
  std::vector<std::string> values;  // YAML text (flow style)
  std::string where;                // position of the key in the plan file
  std::vector<std::string> value_where;
};

enum class Objective { kCheapest, kFewestGpus, kUsersPerGpu };
const char* to_string(Objective o);

/// Arrival shapes of the generated load (traces/synthetic.h).
struct LoadConfig {
  std::uint64_t users = 1000;
  double requests_per_user_per_hour = 0;      // 0: rate_per_s is given
  double rate_per_s = 0;                      // total, mean over the day
  double peak_factor = 1;                     // the planner sizes for mean rate x peak_factor
  std::string arrival = "poisson";            // poisson | gamma
  double cv = 1;                              // gamma: coefficient of variation of the gaps
  std::vector<double> diurnal;                // 24 hourly weights (empty: flat); sizes for the peak
  std::string replay;                         // an arrival CSV (traces/arrival_replay.h), or empty
  double replay_speedup = 1;                  // its time axis runs this many times faster
  std::vector<std::int64_t> replay_times_ns;  // its rows' times since the first row
  /// The trace's shape: `generate` (LoCoMo-shaped, traces/synthetic.h), `locomo` (LoCoMo
  /// itself, each speaker once) or `file` (`trace_file`). The last two are re-sized to `users`
  /// and re-timed to the rate for each probe (traces/scaled_trace.h).
  std::string trace = "generate";
  std::string trace_file;
  std::shared_ptr<const SourceTrace> source;  // locomo, file: what the probes are scaled from
  /// The mean request rate over the day, in requests per second.
  double mean_rate_per_s() const;
  /// The rate the fleet is sized for: the mean x peak_factor x (peak hour / mean hour).
  double sizing_rate_per_s() const;
};

struct ProbeSettings {
  double warmup_s = 60;    // arrivals before this are served but not measured
  double window_s = 120;   // the measured window of arrivals
  double cooldown_s = 10;  // arrivals after the window (keep the window's tail loaded)
  bool early_stop = true;
  bool warm_store = false;  // store.warm of the probes (false: the warm-up fills the store)
};

struct PlanConfig {
  std::string name;
  std::string file;
  YAML::Node base;         // the base experiment document
  std::string base_file;   // names it in errors (the plan file when inline)
  std::string base_where;  // position of `base` in the plan
  LoadConfig load;
  std::string load_where;
  std::vector<SloTarget> slo;
  std::vector<SearchAxis> axes;
  Objective objective = Objective::kCheapest;
  std::map<std::string, double> prices;  // GPU preset name -> USD per GPU-hour
  std::string prices_where;
  ProbeSettings probe;
  std::uint32_t min_replicas = 1;
  std::uint32_t max_replicas = 512;
  std::uint32_t batch = 16;          // candidates searched side by side (fixed: determinism)
  std::uint32_t headroom_steps = 3;  // probes bisecting the highest load at the answer
  bool prune = true;
  std::string out_dir = "results";
  /// The simulator's results version the probe cache is keyed by (kResultsVersion of
  /// sim/runner.h; not a plan key).
  int results_version = 0;
};

/// Reads and checks a plan file (the search keys against the base experiment, the SLO metrics).
PlanConfig load_plan(const std::string& file);

}  // namespace inferscale::plan
