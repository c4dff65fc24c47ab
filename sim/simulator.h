#pragma once
// @brief Simulator: the discrete-event loop of one run. Virtual time in integer nanoseconds;
// events of equal time are ordered (trace records, then step completions, then replica kicks,
// each by insertion order; for step completions that order is computed from each replica's
// chain of steps, so fused steps keep it), so a run is deterministic given its config and trace.

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "executor/executor.h"
#include "sim/config/experiment.h"
#include "sim/metrics.h"
#include "sim/replica.h"
#include "traces/record_stream.h"

namespace inferscale {

/// Makes the executor of replica `index`.
using ExecutorFactory = std::function<std::unique_ptr<Executor>(int index)>;
/// Prices a fact encode (recompute cost for cost-aware policies); a pure function of its
/// arguments (the simulator memoizes it).
using EncodeCostFn = std::function<SimTime(std::uint32_t tokens, std::uint32_t context_tokens)>;
/// Opens the run's trace (a file, or a generator streaming its records).
using TraceOpener = std::function<std::unique_ptr<RecordStream>()>;

struct SimOutputs {
  std::string requests_csv;   // empty: none
  std::string timeline_json;  // empty: none
  bool progress = true;       // progress bar on stderr for runs longer than a second
  std::string partial_dir;    // named once by the progress bar: where partial results are
  /// Runs a replica's steps that finish no request back to back, without the event queue, up to
  /// the next trace record that reaches it (of any replica under a router that reads the
  /// replicas' state), and runs of decode-only steps at once where the executor prices them
  /// (open-loop traces, no timeline). Same results; for executors whose price of a step depends
  /// only on that replica's plans (cost model, calibrated), since the replicas' execute() calls
  /// then interleave differently.
  bool fuse_quiet_steps = false;
  /// Replica-local fact and user records (Replica::set_compact_ids): -1 where compact_records
  /// chooses them, 0 never, 1 always. Same results either way.
  int compact_ids = -1;
  /// Called with each request as it completes (after its metrics are recorded), e.g. by the
  /// planner, which measures a window of the run and may end it early by throwing.
  std::function<void(const Request&)> on_complete;
  /// A partitioned fleet run (sim/partition.h): this is part `part` of `parts`, simulating the
  /// replicas r with r % parts == part and the trace records that reach them. Every record is
  /// still read, so fact ids and trace positions are the whole trace's.
  std::uint32_t part = 0, parts = 1;
  /// Partitioned: the fleet's first arrival and last finish from this part's (an exchange
  /// among the parts; every part calls it once, from run()); the summary's rates use them.
  std::function<std::pair<SimTime, SimTime>(SimTime first_arrival, SimTime last_finish)> fleet_span;
  /// Partitioned: where the order keys of requests.csv's rows and of timeline.json's steps go
  /// (sim/partition.h), so that the parts' files merge in the fleet's order.
  std::string requests_order, timeline_order;
};

/// Fleets larger than this keep replica-local records (SimOutputs::compact_ids).
inline constexpr std::uint32_t kCompactReplicas = 16;
/// Records indexed by fact id cost about 6 bytes a fact in every replica (its pins and its GPU
/// tier's slot): past this many facts times replicas (about 200 MB of them), replicas keep
/// local records instead, which cost what their tiers hold.
inline constexpr std::uint64_t kCompactFactSlots = std::uint64_t{1} << 25;

/// Whether a run keeps replica-local records: `setting` as SimOutputs::compact_ids; automatic
/// (-1) for fleets of more than kCompactReplicas replicas and for populations whose facts
/// (when the trace knows them beforehand, as a generated one does) times the replicas exceed
/// kCompactFactSlots, such as a warm store of a million users on a few replicas.
inline bool compact_records(int setting, std::uint32_t replicas, std::uint64_t population_facts) {
  if (setting >= 0) return setting > 0;
  return replicas > kCompactReplicas || population_facts * replicas > kCompactFactSlots;
}

/// One tier of the store over the run (GPU, host, disk, remote): its instances added up.
struct TierSummary {
  bool enabled = false;
  std::uint64_t capacity_bytes = 0;  // all instances (the GPU tier: every replica's)
  std::uint64_t peak_bytes = 0;      // of the fullest instance
  std::uint64_t final_bytes = 0;     // all instances, at the end
  std::uint64_t hits = 0;            // request facts found first here (first admissions)
  std::uint64_t lookups = 0, hit_bytes = 0, evictions = 0;
  std::uint64_t bytes_in = 0, writes = 0;  // written into it (demotions, promotions, write-through)
  std::uint64_t bytes_out = 0, loads = 0;  // read out of it towards a GPU
  std::uint64_t drops = 0;                 // evicted and written to no tier below
  SimTime load_wait_ns = 0;                // its loads, from issue until on the GPU
};

/// One kind of node link (NVMe reads, NVMe writes, network in, network out) over all nodes.
struct LinkSummary {
  std::uint64_t bytes = 0, transfers = 0;
  double busiest_fraction = 0;  // of the run, the busiest node's link was carrying data
};

/// The figures summary.json reports (besides the config).
struct RunSummary {
  std::uint64_t requests = 0, output_tokens = 0, good = 0;
  double makespan_s = 0;
  double throughput_rps = 0, tokens_per_s = 0, goodput_rps = 0;
  Percentiles ttft_ms, tpot_ms, e2e_ms, queue_ms;
  std::uint64_t lookups = 0, gpu_hits = 0, host_hits = 0, disk_hits = 0, remote_hits = 0,
                misses = 0;
  std::array<TierSummary, 4> tiers;  // gpu, host, disk, remote
  std::array<LinkSummary, 4> links;  // disk read, disk write, network in, network out
  std::uint64_t lookup_bytes = 0, gpu_hit_bytes = 0, host_hit_bytes = 0;
  std::uint64_t preemptions = 0, prefill_tokens = 0;
  std::uint64_t encodes = 0, encode_tokens = 0, memory_write_encodes = 0, loads = 0;
  std::uint64_t store_capacity_bytes = 0, store_peak_bytes = 0, store_final_bytes = 0;
  double store_mean_bytes = 0;
  double busy_fraction = 0;
  std::uint64_t steps = 0;
  // Invariant evidence (checked by the tests).
  std::uint64_t max_batch_tokens_seen = 0;
  std::uint64_t max_kv_blocks_used = 0, kv_blocks_total = 0;
  std::uint64_t facts = 0, users = 0;
  double wall_s = 0;
  double events_per_s = 0;
  std::uint64_t fused_steps = 0;  // steps whose end was handled without the queue (not written)
  std::uint64_t decode_run_steps = 0;  // of the steps, those started by Replica::run_decodes (not
                                       // written)
  std::uint64_t windows = 0;  // windows of the trace run replica by replica, 0: one queue (not
                              // written)
  // Replicas' local fact records at the end, after a last sweep (Replica::sweep_local_facts),
  // and those freed during the run (not written).
  std::uint64_t local_facts = 0, local_facts_freed = 0;
  std::uint64_t resident_facts = 0;  // at the end, in the replicas' GPU tiers (not written; the
                                     // tiers below number facts themselves)
  // The nodes' fact ids held at the end (after a last sweep where they are recycled) and the
  // facts their host and disk tiers hold (not written).
  std::uint64_t node_ids = 0, node_resident_facts = 0;
  std::uint64_t node_id_records = 0;  // the nodes' id records ever allocated (their peak)
  // For merging the parts of a partitioned run (not written): the executors' busy time, each
  // replica's mean store bytes (0 for replicas of other parts), the events handled.
  std::int64_t busy_ns = 0;
  std::vector<double> store_mean_bytes_by_replica;
  std::uint64_t events = 0;
};

/// Every completed request's latencies in milliseconds (what the summary's percentiles are of),
/// in no particular order.
struct RequestValues {
  std::vector<double> ttft_ms, tpot_ms, e2e_ms, queue_ms;
};

class Simulator {
 public:
  Simulator(const RunConfig& cfg, std::string trace_path, ExecutorFactory executors,
            EncodeCostFn encode_cost, SimOutputs outputs, NextAccessFn next_access = {});
  /// The same, with the trace opened by `open` (a generated trace that is never written).
  Simulator(const RunConfig& cfg, TraceOpener open, ExecutorFactory executors,
            EncodeCostFn encode_cost, SimOutputs outputs, NextAccessFn next_access = {});
  ~Simulator();
  /// How a fact's asynchronous host load is priced (store.host.async_loads); by default the
  /// roofline cost model of the run's GPU. Call before run().
  void set_load_cost(std::function<SimTime(std::uint64_t bytes)> cost);
  /// Runs the whole trace; throws InputError for bad trace data (nothing is kept then), and
  /// ExecutorFailure when an executor fails (see partial_summary()).
  RunSummary run();
  /// After run() threw ExecutorFailure: closes the outputs (requests.csv then holds the requests
  /// completed so far) and summarizes what was measured.
  RunSummary partial_summary();
  /// After run(): the requests' latencies, moved out (a partitioned run's parts merge them).
  RequestValues take_request_values();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace inferscale
