#pragma once
// @brief Probes: one simulation of a steady-state window of one candidate at one size and load,
// its pass/fail against the SLOs, and the pool of workers that runs probes side by side.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "plan/plan_config.h"
#include "sim/config/experiment.h"
#include "sim/simulator.h"

namespace inferscale::plan {

/// What the planner asks for: a candidate at `replicas`, under the plan's load x `load_factor`.
struct ProbeSpec {
  std::size_t candidate = 0;
  std::uint32_t replicas = 1;
  double load_factor = 1;
};

/// A probe resolved for running: its configuration, trace, measurement window and SLOs. Made
/// by the coordinating thread (it reads YAML); a worker only reads it.
struct ProbeTask {
  ProbeSpec spec;
  RunConfig run;
  TraceOpener open;
  SimTime warmup_ns = 0;
  SimTime window_end_ns = 0;
  std::uint64_t max_window_requests = 0;  // the trace's requests: bounds the window's count
  std::vector<SloTarget> slo;
  bool early_stop = true;
  /// The GPU stores' capacity over all replicas in tokens (0: no store), and a fact's mean
  /// tokens: whether the warm-up turned the store over (filled it once) is checked from the
  /// facts that the warm-up's requests missed.
  double store_tokens = 0;
  double fact_tokens = 0;
  std::string key_text;  // the resolved configuration, hashed into `key`
  std::string key;       // 16 hex digits
  // What rebuilds this task in another process (make_probe_task's inputs) and names it.
  std::string run_name;
  std::vector<std::string> sets;
  std::uint64_t users = 0;
  std::uint64_t store_bytes_per_gpu = 0, kv_bytes_per_token_per_gpu = 0;
  std::string label;
};

struct ProbeResult {
  bool pass = false;
  bool stopped_early = false;
  bool cached = false;
  std::uint64_t measured = 0;  // requests of the window that completed (all, unless stopped)
  double ttft_p50_ms = 0, ttft_p99_ms = 0, tpot_p99_ms = 0, e2e_p99_ms = 0;
  double gpu_hit = 0;  // object hit ratio of the GPU store over the whole run (0 if stopped)
  double wall_s = 0;
  std::string missed;       // the first SLO missed ("ttft_p99_ms"), empty when passing
  bool turned_over = true;  // the warm-up's misses filled the GPU stores at least once
};

/// Runs one probe to its end, or until its failure is certain (early stop). Thread-safe for
/// distinct tasks: each simulation is single-threaded and shares nothing mutable.
ProbeResult run_probe(const ProbeTask& task);

/// @brief Where probes run. The local pool runs one simulation per worker thread; a
/// distributed backend (MPI ranks) implements the same call. Results come back in the order
/// of `tasks`, so the planner's decisions do not depend on which worker ran what.
class ProbeRunner {
 public:
  virtual ~ProbeRunner() = default;
  /// `done` (if set) is called with each result as soon as it is known, on any thread.
  using Done = std::function<void(const ProbeTask&, const ProbeResult&)>;
  virtual std::vector<ProbeResult> run(const std::vector<const ProbeTask*>& tasks,
                                       const Done& done) = 0;
};

/// `jobs` worker threads (0: one per core).
std::unique_ptr<ProbeRunner> make_local_runner(unsigned jobs);

}  // namespace inferscale::plan
