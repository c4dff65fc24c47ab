#pragma once
// Checks that two runs of the simulator that must agree (fused and plain steps, slot and fact
// ids, direct and virtual LRU) give the same summary, field by field, and the same requests.csv.

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>

#include "sim/config/experiment.h"
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

/// Runs `body` + `store` (policies named LRU) and the same with each `eviction: lru}` of `store`
/// replaced by `eviction: <eviction>}`, once for each of `fuse` (fused quiet steps or not);
/// requests.csv and the summary must agree. Returns the encodes of the runs with LRU.
inline std::uint64_t check_same_as_lru(const std::filesystem::path& dir, const std::string& trace,
                                       const std::string& body, const std::string& store,
                                       const std::string& eviction,
                                       std::initializer_list<bool> fuse = {false}) {
  std::string other = store;
  const std::string replacement = "eviction: " + eviction + "}";
  for (std::size_t p; (p = other.find("eviction: lru}")) != std::string::npos;) {
    other.replace(p, 14, replacement);
  }
  INFO(body << store);
  const auto a_exp =
      load_experiment(write_text(dir / "a.yaml", tiny_config(trace, body + store)), {});
  const auto b_exp =
      load_experiment(write_text(dir / "b.yaml", tiny_config(trace, body + other)), {});
  REQUIRE(a_exp.runs.size() == 1);
  std::uint64_t encodes = 0;
  for (const bool fused : fuse) {
    const Outcome a = simulate(a_exp.runs[0], a_exp.runs[0].trace.path, dir / "a.csv", fused);
    const Outcome b = simulate(b_exp.runs[0], b_exp.runs[0].trace.path, dir / "b.csv", fused);
    CHECK(a.summary.requests > 0);
    CHECK(a.csv == b.csv);
    check_same_summary(a.summary, b.summary);
    encodes += a.summary.encodes;
  }
  return encodes;
}

}  // namespace inferscale::test
