// Whole-run properties: completion exactly once, budgets and memory never exceeded, determinism.
#include <map>
#include <set>

#include "sim/config/experiment.h"
#include "sim/runner.h"
#include "tests/catch.h"
#include "tests/sim/sim_test_util.h"
#include "traces/synthetic.h"
#include "traces/writer.h"

using namespace inferscale;
using namespace inferscale::test;

namespace {

/// A small synthetic trace: `users` users, `requests` requests, memory writes during the run.
std::string make_trace(const std::filesystem::path& dir, std::uint64_t seed, double rate,
                       std::uint32_t live_sessions = 2) {
  SyntheticOptions o;
  o.users = 40;
  o.requests = 600;
  o.facts_per_user = 12;
  o.facts_per_user_spread = 4;
  o.sessions_min = 3;
  o.sessions_max = 6;
  o.live_sessions = live_sessions;
  o.k = 8;
  o.arrival.rate_per_s = rate;
  o.seed = seed;
  const auto path = (dir / ("trace" + std::to_string(seed) + ".jsonl")).string();
  TraceWriter w(path);
  generate_synthetic(o, w);
  w.close();
  return path;
}

std::vector<RunOutcome> run(const std::filesystem::path& dir, const std::string& yaml) {
  const auto exp = load_experiment(write_text(dir / "exp.yaml", yaml), {});
  RunnerOptions opts;
  opts.out_dir = (dir / "results").string();
  opts.progress = false;
  return run_experiment(exp, opts);
}

/// Tight memory, a small store and a small token budget: preemptions, evictions, chunked
/// prefill, encodes of misses and of memory writes all happen.
const char* kStress =
    "gpu: {name: small, memory: 60KiB, bf16_tflops: 1, hbm_gbps: 1, pcie_gbps: 1,"
    " step_overhead_us: 100}\n"
    "scheduler: {max_batch_tokens: 96, max_seqs: 16}\n"
    "serving: {k: 8, header_tokens: 16, footer_tokens: 4, cwe_window: 2, turn_tokens: 10}\n"
    "store: {gpu: {capacity: 24KiB, eviction: lru}, host: {capacity: 32KiB, eviction: fifo}}\n";

}  // namespace

TEST_CASE("stress run: every request completes once, and budget, KV memory and store hold") {
  const auto dir = temp_dir("stress");
  const auto trace = make_trace(dir, 3, 5000);
  for (const char* mode : {"text", "kv_inject"}) {
    for (const char* router : {"user_affinity", "least_loaded", "round_robin"}) {
      INFO(mode << " " << router);
      const auto outcomes =
          run(dir, tiny_config(trace, std::string(kStress) + "replicas: 3\nrouter: " + router +
                                          "\nruns:\n  - name: r\n    serving: {mode: " + mode +
                                          "}\n"));
      const auto& s = outcomes.at(0).summary;
      const auto rows = read_csv(std::filesystem::path(outcomes[0].dir) / "requests.csv");
      std::set<std::string> ids;
      for (const auto& r : rows) ids.insert(r[0]);
      CHECK(rows.size() == 600);
      CHECK(ids.size() == 600);
      CHECK(s.max_batch_tokens_seen <= 96);
      CHECK(s.max_kv_blocks_used <= s.kv_blocks_total);
      CHECK(s.store_peak_bytes <= 24 * 1024);
      for (const auto& r : rows) {
        CHECK(std::stod(r[6]) > 0);                     // ttft
        CHECK(std::stod(r[4]) >= std::stod(r[3]));      // first_token >= arrival
        CHECK(std::stod(r[5]) >= std::stod(r[4]));      // finish >= first_token
      }
      if (std::string(mode) == "kv_inject") {
        CHECK(s.preemptions > 0);  // the memory is tight on purpose
        CHECK(s.misses > 0);
        CHECK(s.gpu_hits > 0);
        CHECK(s.memory_write_encodes > 0);
      }
    }
  }
}

TEST_CASE("same seed gives byte-identical requests.csv, another seed differs") {
  const auto dir = temp_dir("determinism");
  const auto trace = make_trace(dir, 5, 300);
  const std::string yaml =
      tiny_config(trace, std::string(kStress) + "replicas: 2\nrouter: least_loaded\n");
  const auto a = read_text(std::filesystem::path(run(dir, yaml).at(0).dir) / "requests.csv");
  const auto b = read_text(std::filesystem::path(run(dir, yaml).at(0).dir) / "requests.csv");
  CHECK(a.size() > 1000);
  CHECK(a == b);
  const auto other = make_trace(dir, 6, 300);
  const auto c = read_text(std::filesystem::path(run(dir, tiny_config(other, std::string(kStress) +
                                                                             "replicas: 2\n"))
                                                     .at(0)
                                                     .dir) /
                           "requests.csv");
  CHECK(a != c);
}

TEST_CASE("kv_inject prefills less and answers sooner than text at k=8") {
  const auto dir = temp_dir("modes");
  const auto trace = make_trace(dir, 9, 50, 0);
  const auto outcomes = run(
      dir, tiny_config(trace,
                       "gpu: {name: g, memory: 1GiB, bf16_tflops: 0.001, hbm_gbps: 100,"
                       " pcie_gbps: 10, step_overhead_us: 10}\n"
                       "serving: {k: 8, header_tokens: 16}\n"
                       "store: {gpu: {capacity: 10%}}\n"
                       "runs:\n  - name: text\n    serving: {mode: text}\n"
                       "  - name: kv\n    serving: {mode: kv_inject}\n"));
  const auto& text = outcomes.at(0).summary;
  const auto& kv = outcomes.at(1).summary;
  CHECK(kv.prefill_tokens < text.prefill_tokens);
  CHECK(kv.ttft_ms.p50 < text.ttft_ms.p50);
  CHECK(kv.gpu_hits == kv.lookups);  // warm store, everything fits
}

TEST_CASE("offline policies see the trace's future in a run: Belady hits at least as often") {
  // With no future (as before the runner passed one), Belady bypasses every insertion and hits
  // no more often than a store that never evicts, well below the online policies.
  const auto dir = temp_dir("offline");
  const auto trace = make_trace(dir, 11, 50, 0);
  std::string yaml =
      "gpu: {name: g, memory: 1GiB, bf16_tflops: 0.001, hbm_gbps: 100, pcie_gbps: 10,"
      " step_overhead_us: 10}\n"
      "serving: {mode: kv_inject, k: 8, header_tokens: 16}\n"
      "store: {gpu: {capacity: 24KiB}}\n"
      "runs:\n";
  const std::vector<std::string> policies{"belady", "lru", "fifo", "s3fifo", "gdsf", "unbounded"};
  for (const auto& p : policies) yaml += "  - {name: " + p + ", store: {gpu: {eviction: " + p + "}}}\n";
  const auto outcomes = run(dir, tiny_config(trace, yaml));
  REQUIRE(outcomes.size() == policies.size());
  const auto hits = [&](std::size_t i) { return outcomes[i].summary.gpu_hits; };
  INFO("belady " << hits(0) << ", lru " << hits(1) << ", unbounded " << hits(5));
  CHECK(outcomes[0].summary.lookups == outcomes[1].summary.lookups);
  for (std::size_t i = 1; i < policies.size(); ++i) {
    INFO(policies[i] << ": " << hits(i));
    CHECK(hits(0) >= hits(i));
  }
  CHECK(hits(0) > hits(5));
}
