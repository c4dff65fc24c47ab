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

/// Runs every run of `yaml` fused and not; checks they agree. Returns the fused steps seen
/// (and adds those that runs of decode-only steps started to `decode_runs`).
std::uint64_t check_same(const std::filesystem::path& dir, const std::string& yaml,
                         std::uint64_t* decode_runs = nullptr) {
  const auto exp = load_experiment(write_text(dir / "exp.yaml", yaml), {});
  std::uint64_t fused = 0;
  for (const RunConfig& run : exp.runs) {
    INFO(yaml);
    INFO("run " << run.name);
    const Outcome a = simulate(run, run.trace.path, dir / "plain.csv", false);
    const Outcome b = simulate(run, run.trace.path, dir / "fused.csv", true);
    CHECK(a.summary.fused_steps == 0);
    CHECK(a.summary.decode_run_steps == 0);
    CHECK(b.summary.decode_run_steps <= b.summary.fused_steps + b.summary.steps);
    fused += b.summary.fused_steps;
    if (decode_runs != nullptr) *decode_runs += b.summary.decode_run_steps;
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
  std::uint64_t fused = 0, decode_runs = 0;
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
    fused += check_same(dir, yaml, &decode_runs);
  }
  CHECK(fused > 0);
  CHECK(decode_runs > 0);
}

TEST_CASE("fused steps: same results under preemption, host tier, encodes and memory writes") {
  const auto dir = temp_dir("fused_stress");
  // As simulator_test's stress config: tight KV memory, small store, small token budget.
  const std::string stress =
      std::string(kStressBody) +
      "store: {gpu: {capacity: 24KiB, eviction: lru}, host: {capacity: 32KiB, eviction: fifo}}\n";
  std::uint64_t fused = 0, decode_runs = 0;
  int i = 0;
  for (const double rate : {30.0, 300.0, 3000.0}) {
    for (const std::uint32_t out : {1u, 3u, 40u}) {
      const std::string trace = synthetic_trace(dir, 7 + i, rate, out, false);
      const std::string yaml =
          tiny_config(trace, stress + "replicas: " + std::to_string(1 + i % 4) +
                                 "\nrouter: " + kRouters[i % 3] + "\n");
      fused += check_same(dir, yaml, &decode_runs);
      ++i;
    }
  }
  CHECK(fused > 0);
  CHECK(decode_runs > 0);
  // Closed loop: never fused (a completion issues the user's next request), same results.
  const std::string closed = synthetic_trace(dir, 99, 100, 20, true);
  CHECK(check_same(dir, tiny_config(closed, stress + "replicas: 2\n")) == 0);
}

TEST_CASE("fused steps: long runs of decode-only steps, KV blocks running out, read-ahead") {
  // Long answers on a GPU whose step time grows with the context: runs of decode-only steps
  // (Replica::run_decodes) cross many KV blocks, stop where a request would find no free block
  // (then start_step preempts), and, under the routers that route by the record alone, reach
  // past records that go to other replicas.
  const auto dir = temp_dir("fused_long");
  std::uint64_t fused = 0, decode_runs = 0;
  int i = 0;
  for (const char* memory : {"60KiB", "40KiB"}) {
    for (const double rate : {20.0, 200.0}) {
      for (const char* router : kRouters) {
        SmallTrace t;
        t.seed = 31 + i;
        t.rate = rate;
        t.requests = 120;
        t.output_tokens = 150;
        const std::string trace = small_trace(dir, "long", t);
        const std::string body =
            std::string("gpu: {name: small, memory: ") + memory +
            ", bf16_tflops: 1, hbm_gbps: 1, pcie_gbps: 1, step_overhead_us: 100}\n"
            "scheduler: {max_batch_tokens: 96, max_seqs: 16}\n"
            "serving: {k: 8, header_tokens: 16, footer_tokens: 4}\n"
            "store: {gpu: {capacity: 16KiB, eviction: lru}}\n"
            "replicas: " +
            std::to_string(1 + i % 4) + "\nrouter: " + router + "\n";
        fused += check_same(dir, tiny_config(trace, body), &decode_runs);
        ++i;
      }
    }
  }
  CHECK(fused > 0);
  CHECK(decode_runs > fused / 2);
}
