// Golden end-to-end run on a two-request trace whose metrics are worked out by hand.
#include "sim/config/experiment.h"
#include "sim/runner.h"
#include "tests/catch.h"
#include "tests/sim/sim_test_util.h"

using namespace inferscale;
using namespace inferscale::test;

namespace {

// Every step costs exactly 1 ms (step_overhead_us 1000, nothing else measurable):
//  step 1 [0, 1 ms]:  request 1 prefills (8 query tokens)      -> first token at 1 ms
//  (request 2 arrives at 0.5 ms and waits for the step to end)
//  step 2 [1, 2 ms]:  request 1 decodes (token 2); request 2 prefills -> its first token at 2 ms
//  step 3 [2, 3 ms]:  both decode: request 1 has 3 tokens, request 2 has 2: both finish at 3 ms
// So: request 1: TTFT 1, TPOT (3-1)/2 = 1, E2E 3, queue 0; request 2: TTFT 1.5, TPOT 1, E2E 2.5,
// queue 0.5 (ms). Throughput: 2 requests in 3 ms = 666.67 req/s.
const std::vector<std::vector<std::string>> kExpected = {
    // id user replica arrival first_token finish ttft tpot e2e
    {"1", "1", "0", "0.000000", "1.000000", "3.000000", "1.000000", "1.000000", "3.000000"},
    {"2", "1", "0", "0.500000", "2.000000", "3.000000", "1.500000", "1.000000", "2.500000"},
};

}  // namespace

TEST_CASE("golden run: hand-computed TTFT, TPOT, E2E, hits in both modes") {
  const auto dir = temp_dir("golden");
  const auto cfg = write_text(dir / "golden.yaml",
                              tiny_config(source_path("tests/sim/data/golden.jsonl"),
                                          "scheduler: {max_batch_tokens: 1024, max_seqs: 8}\n"
                                          "serving: {k: 50, header_tokens: 0, footer_tokens: 0}\n"
                                          "store: {gpu: {capacity: 64KiB}}\n"
                                          "runs:\n  - name: text\n    serving: {mode: text}\n"
                                          "  - name: kv\n    serving: {mode: kv_inject}\n"));
  const auto exp = load_experiment(cfg, {});
  RunnerOptions opts;
  opts.out_dir = (dir / "results").string();
  opts.progress = false;
  const auto outcomes = run_experiment(exp, opts);
  REQUIRE(outcomes.size() == 2);
  for (const auto& o : outcomes) {
    INFO(o.config.name);
    const auto rows = read_csv(std::filesystem::path(o.dir) / "requests.csv");
    REQUIRE(rows.size() == 2);
    // Completion order: request 1 then 2 (same step, plan order).
    for (std::size_t i = 0; i < 2; ++i) {
      for (std::size_t c = 0; c < kExpected[i].size(); ++c) CHECK(rows[i][c] == kExpected[i][c]);
    }
    const bool kv = o.config.name == "kv";
    // k, gpu_hits, host_hits, misses, prefill_tokens, queue_delay
    CHECK(rows[0][9] == "2");
    CHECK(rows[0][10] == (kv ? "2" : "0"));
    CHECK(rows[0][12] == "0");
    CHECK(rows[0][13] == (kv ? "8" : "40"));  // text: 16 + 16 + 8 tokens computed
    CHECK(rows[1][10] == (kv ? "1" : "0"));
    CHECK(rows[1][13] == (kv ? "8" : "24"));
    CHECK(rows[1][14] == "0.500000");
    CHECK(o.summary.throughput_rps == Approx(2.0 / 0.003));
    CHECK(o.summary.ttft_ms.p50 == Approx(1.0));
    CHECK(o.summary.ttft_ms.p99 == Approx(1.5));
    CHECK(o.summary.steps == 3);
  }
}
