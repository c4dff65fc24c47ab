#pragma once
// Checks that two runs of the simulator that must agree (fused and plain steps, slot and fact
// ids) give the same summary, field by field (requests.csv is compared by the caller).

#include <filesystem>
#include <string>

#include "sim/executor_factory.h"
#include "sim/simulator.h"
#include "tests/catch.h"
#include "tests/sim/sim_test_util.h"

namespace inferscale::test {

struct Outcome {
  std::string csv;  // requests.csv
  RunSummary summary;
};

/// Runs `run` over `trace` with its own executors, requests.csv to `csv`; fused quiet steps
/// as `fuse` says.
inline Outcome simulate(const RunConfig& run, const std::string& trace,
                        const std::filesystem::path& csv, bool fuse = false) {
  SimOutputs out;
  out.requests_csv = csv.string();
  out.progress = false;
  out.fuse_quiet_steps = fuse;
  Simulator sim(
      run, trace, [&run](int i) { return make_executor(run, i); }, {}, out);
  Outcome o;
  o.summary = sim.run();
  o.csv = read_text(csv);
  return o;
}

inline void check_same_summary(const RunSummary& x, const RunSummary& y) {
  CHECK(x.steps == y.steps);
  CHECK(x.requests == y.requests);
  CHECK(x.makespan_s == y.makespan_s);
  CHECK(x.busy_fraction == y.busy_fraction);
  CHECK(x.store_mean_bytes == y.store_mean_bytes);
  CHECK(x.store_peak_bytes == y.store_peak_bytes);
  CHECK(x.preemptions == y.preemptions);
  CHECK(x.encodes == y.encodes);
  CHECK(x.loads == y.loads);
  CHECK(x.gpu_hits == y.gpu_hits);
  CHECK(x.host_hits == y.host_hits);
  CHECK(x.max_kv_blocks_used == y.max_kv_blocks_used);
  CHECK(x.ttft_ms.p99 == y.ttft_ms.p99);
  CHECK(x.tpot_ms.mean == y.tpot_ms.mean);
}

}  // namespace inferscale::test
