// Zero-copy injection in the simulator (executor.inject: zero_copy): a kv_inject request in
// flight holds no KV of its own for the facts it reads in place from the store, and the
// injection copy is no longer priced. On a saturated H200 replica at k = 50 whose request KV is
// the memory left by a large store, the running batch grows and each request's blocks shrink to
// its footer, query and answer.
#include <algorithm>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/catch.h"
#include "tests/sim/sim_test_util.h"

using namespace inferscale::test;

namespace {

struct Figures {
  std::uint32_t max_batch = 0;   // sequences of the largest step
  double blocks_per_decode = 0;  // KV blocks per request over decode-only steps (max)
  double inject_us = 0;          // summed over the run's steps
  double ttft_p50_ms = 0, req_per_s = 0;
};

Figures figures(const std::filesystem::path& run) {
  Figures f;
  const auto timeline = nlohmann::json::parse(read_text(run / "timeline.json"));
  for (const auto& e : timeline["traceEvents"]) {
    if (e.value("name", "") != "step") continue;
    const auto& a = e["args"];
    const std::uint32_t prefills = a["prefills"], decodes = a["decodes"];
    f.max_batch = std::max(f.max_batch, prefills + decodes);
    f.inject_us += a["inject_us"].get<double>();
    if (prefills == 0 && decodes > 0) {
      f.blocks_per_decode =
          std::max(f.blocks_per_decode, a["kv_blocks"].get<double>() / double(decodes));
    }
  }
  const auto summary = nlohmann::json::parse(read_text(run / "summary.json"));
  f.ttft_p50_ms = summary["ttft_ms"]["p50"];
  f.req_per_s = summary["throughput"]["requests_per_s"];
  return f;
}

}  // namespace

TEST_CASE("zero-copy injection: smaller requests in flight, a larger batch, no inject cost") {
  const auto dir = temp_dir("zero_copy");
  const std::string config = write_text(
      dir / "zc.yaml",
      "experiment: zc\nseed: 3\nmodel: llama-3.1-8b\ngpu: h200\n"
      "trace: {generate: {users: 40, requests: 1200, k: 50, arrival: poisson, rate: 400}}\n"
      "serving: {k: 50, mode: kv_inject}\nscheduler: {max_seqs: 2048}\n"
      "store: {gpu: {capacity: 70%}}\noutput: {timeline: true}\n"
      "runs:\n  - name: copy\n  - name: zero_copy\n    executor: {inject: zero_copy}\n");
  REQUIRE(run_cli("run " + config + " --no-progress --out " + (dir / "out").string(),
                  dir / "log.txt") == 0);
  const Figures copy = figures(dir / "out" / "zc" / "copy");
  const Figures zero = figures(dir / "out" / "zc" / "zero_copy");
  CAPTURE(copy.max_batch, zero.max_batch, copy.blocks_per_decode, zero.blocks_per_decode,
          copy.inject_us, zero.inject_us, copy.ttft_p50_ms, zero.ttft_p50_ms);
  // The copy path's requests hold k x fact tokens each (50 facts of the trace's lengths); the
  // zero-copy path's only footer + query + answer.
  CHECK(copy.blocks_per_decode > 4 * zero.blocks_per_decode);
  CHECK(zero.max_batch > 3 * copy.max_batch);
  CHECK(copy.inject_us > 0);
  CHECK(zero.inject_us == 0);
  CHECK(zero.req_per_s > copy.req_per_s);
}
