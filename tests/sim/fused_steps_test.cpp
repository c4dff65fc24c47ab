// Fused steps (SimOutputs::fuse_quiet_steps): a replica's steps that finish no request run back
// to back without the event queue. Every run here is simulated with and without it and must give
// byte-identical requests.csv and the same summary.
#include <random>

#include "sim/config/experiment.h"
#include "sim/executor_factory.h"
#include "sim/simulator.h"
#include "tests/catch.h"
#include "tests/sim/same_run.h"
#include "tests/sim/sim_test_util.h"
#include "tests/sim/small_trace.h"
#include "traces/synthetic.h"
#include "traces/writer.h"

using namespace inferscale;
using namespace inferscale::test;

namespace {

/// Runs every run of `yaml` fused and not; checks they agree. Returns the fused steps seen.
std::uint64_t check_same(const std::filesystem::path& dir, const std::string& yaml) {
  const auto exp = load_experiment(write_text(dir / "exp.yaml", yaml), {});
  std::uint64_t fused = 0;
  for (const RunConfig& run : exp.runs) {
    INFO(yaml);
    INFO("run " << run.name);
    const Outcome a = simulate(run, run.trace.path, dir / "plain.csv", false);
    const Outcome b = simulate(run, run.trace.path, dir / "fused.csv", true);
    CHECK(a.summary.fused_steps == 0);
    fused += b.summary.fused_steps;
    CHECK(a.summary.requests > 0);
    CHECK(a.csv == b.csv);
    check_same_summary(a.summary, b.summary);
  }
  return fused;
}

/// A random trace on whole milliseconds: on the tiny GPU every step lasts exactly 1 ms, so
/// arrivals and memory writes often fall at the very time a step ends (the record goes first).
std::string ms_trace(const std::filesystem::path& dir, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int users = pick(1, 6);
  const int facts_per_user = pick(2, 10);
  std::string body = "{\"type\":\"header\",\"version\":1,\"source\":\"fused_test\"}\n";
  for (int u = 1; u <= users; ++u) {
    for (int f = 0; f < facts_per_user; ++f) {
      body += "{\"type\":\"fact\",\"id\":" + std::to_string(u * 1000 + f) +
              ",\"user\":" + std::to_string(u) + ",\"tokens\":" + std::to_string(pick(4, 40)) +
              "}\n";
    }
  }
  std::int64_t ms = 0;
  int next_write = facts_per_user;
  const int requests = pick(5, 60);
  for (int i = 0; i < requests; ++i) {
    ms += pick(0, 3) == 0 ? 0 : pick(0, 12);  // several records at one time, now and then
    const std::string time = std::to_string(ms * 1000000);
    const int user = pick(1, users);
    if (pick(0, 5) == 0) {
      body += "{\"type\":\"memory_write\",\"id\":" + std::to_string(user * 1000 + next_write++) +
              ",\"user\":" + std::to_string(user) + ",\"time\":" + time +
              ",\"tokens\":" + std::to_string(pick(4, 40)) + "}\n";
    }
    std::string facts;
    const int k = pick(0, facts_per_user);
    for (int j = 0; j < k; ++j) {
      if (j > 0) facts += ',';
      facts += std::to_string(user * 1000 + pick(0, facts_per_user - 1));
    }
    body += "{\"type\":\"request\",\"id\":" + std::to_string(i + 1) +
            ",\"user\":" + std::to_string(user) + ",\"time\":" + time +
            ",\"query_tokens\":" + std::to_string(pick(1, 30)) +
            ",\"output_tokens\":" + std::to_string(pick(1, 25)) + ",\"facts\":[" + facts + "]}\n";
  }
  return write_text(dir / ("ms" + std::to_string(seed) + ".jsonl"), body);
}

std::string synthetic_trace(const std::filesystem::path& dir, std::uint64_t seed, double rate,
                            std::uint32_t output_tokens, bool closed) {
  SmallTrace t;
  t.seed = seed;
  t.rate = rate;
  t.output_tokens = output_tokens;
  t.live_sessions = closed ? 0 : 2;  // memory writes during the run (open loop only)
  t.closed_loop = closed ? 6 : 0;
  return small_trace(dir, "syn", t);
}

const char* kRouters[] = {"round_robin", "least_loaded", "user_affinity"};

}  // namespace

TEST_CASE("fused steps: same results on random traces whose records fall on step ends") {
  const auto dir = temp_dir("fused_ms");
  std::uint64_t fused = 0;
  for (std::uint64_t seed = 1; seed <= 24; ++seed) {
    const std::string trace = ms_trace(dir, seed);
    const std::string mode = seed % 3 == 0 ? "text" : "kv_inject";
    const std::string yaml = tiny_config(
        trace, "scheduler: {max_batch_tokens: " + std::to_string(seed % 2 ? 48 : 1024) +
                   ", max_seqs: " + std::to_string(2 + seed % 5) + "}\n" +
                   "serving: {mode: " + mode + ", k: 6, header_tokens: 8, footer_tokens: 2}\n" +
                   "store: {gpu: {capacity: " + (seed % 4 == 0 ? "2KiB" : "64KiB") + "}}\n" +
                   "replicas: " + std::to_string(1 + seed % 3) + "\nrouter: " + kRouters[seed % 3] +
                   "\n");
    fused += check_same(dir, yaml);
  }
  CHECK(fused > 0);
}

TEST_CASE("fused steps: same results under preemption, host tier, encodes and memory writes") {
  const auto dir = temp_dir("fused_stress");
  // As simulator_test's stress config: tight KV memory, small store, small token budget.
  const std::string stress =
      std::string(kStressBody) +
      "store: {gpu: {capacity: 24KiB, eviction: lru}, host: {capacity: 32KiB, eviction: fifo}}\n";
  std::uint64_t fused = 0;
  int i = 0;
  for (const double rate : {30.0, 300.0, 3000.0}) {
    for (const std::uint32_t out : {1u, 3u, 40u}) {
      const std::string trace = synthetic_trace(dir, 7 + i, rate, out, false);
      const std::string yaml =
          tiny_config(trace, stress + "replicas: " + std::to_string(1 + i % 4) +
                                 "\nrouter: " + kRouters[i % 3] + "\n");
      fused += check_same(dir, yaml);
      ++i;
    }
  }
  CHECK(fused > 0);
  // Closed loop: never fused (a completion issues the user's next request), same results.
  const std::string closed = synthetic_trace(dir, 99, 100, 20, true);
  CHECK(check_same(dir, tiny_config(closed, stress + "replicas: 2\n")) == 0);
}
