// The fact store's hierarchy: fact KV precision (store.kv_dtype), nodes, the disk and remote
// tiers, their transfers and their accounting.
#include <nlohmann/json.hpp>

#include "kernels/reference/kv_quant.h"
#include "sim/config/experiment.h"
#include "sim/runner.h"
#include "tests/catch.h"
#include "tests/sim/sim_test_util.h"
#include "traces/error.h"

using namespace inferscale;
using namespace inferscale::test;

namespace {

std::vector<RunOutcome> run_yaml(const std::filesystem::path& dir, const std::string& yaml,
                                 const std::vector<std::string>& sets = {}) {
  const auto exp = load_experiment(write_text(dir / "exp.yaml", yaml), sets);
  validate_experiment(exp);
  RunnerOptions opts;
  opts.out_dir = (dir / "results").string();
  opts.progress = false;
  return run_experiment(exp, opts);
}

nlohmann::json summary_of(const RunOutcome& o) {
  return nlohmann::json::parse(read_text(std::filesystem::path(o.dir) / "summary.json"));
}

}  // namespace

TEST_CASE("store.kv_dtype sets the bytes of stored fact KV as the quantization formats do") {
  const auto dir = temp_dir("kv_dtype_bytes");
  const std::string base = "experiment: e\nmodel: llama-3.1-8b\ngpu: h200\ntrace: " +
                           source_path("tests/sim/data/golden.jsonl") + "\n";
  for (const char* dtype : {"bf16", "fp8", "int8"}) {
    for (const std::uint32_t tp : {1u, 2u}) {
      const auto exp =
          load_experiment(write_text(dir / "c.yaml", base),
                          {std::string("store.kv_dtype=") + dtype, "tp=" + std::to_string(tp)});
      const RunConfig& r = exp.runs.front();
      const ModelConfig& m = r.model;
      const KvFormat f = parse_kv_format(dtype);
      // A K and a V vector per layer and KV head on this GPU, each as the format stores it.
      const std::uint64_t expected = 2ull * m.layers * m.kv_heads_per_gpu(tp) *
                                     kv_format_vector_bytes(f, m.head_dim, m.dtype_bytes);
      INFO(dtype << " tp " << tp);
      CHECK(r.fact_kv_bytes_per_token_per_gpu() == expected);
      // Request KV stays in the model's dtype.
      CHECK(r.kv_bytes_per_token_per_gpu() ==
            2ull * m.layers * m.kv_heads_per_gpu(tp) * m.head_dim * m.dtype_bytes);
    }
  }
  const auto exp = load_experiment(write_text(dir / "c.yaml", base), {"store.kv_dtype=fp8"});
  CHECK(exp.runs.front().fact_kv_bytes_per_token_per_gpu() == 2ull * 32 * 8 * (128 + 4));
}

TEST_CASE("fp8 fact KV fills the stores in fp8 blocks and leaves request KV alone") {
  const auto dir = temp_dir("kv_dtype_run");
  const std::string yaml =
      "experiment: e\nseed: 3\nmodel: llama-3.1-8b\ngpu: h200\n"
      "trace: {generate: {users: 20, requests: 200, k: 20, arrival: poisson, rate: 6}}\n"
      "serving: {k: 20, mode: kv_inject}\n"
      "store: {gpu: {capacity: 0.2%}, host: {capacity: 64GB, async_loads: true}}\n"
      "runs:\n  - {name: bf16, store: {kv_dtype: bf16}}\n"
      "  - {name: fp8, store: {kv_dtype: fp8}}\n";
  const auto runs = run_yaml(dir, yaml);
  REQUIRE(runs.size() == 2);
  const RunSummary& bf16 = runs[0].summary;
  const RunSummary& fp8 = runs[1].summary;
  const std::uint64_t bf16_block = 16ull * 131072, fp8_block = 16ull * 2 * 32 * 8 * 132;
  REQUIRE(bf16.store_peak_bytes > 0);
  CHECK(bf16.store_peak_bytes % bf16_block == 0);
  CHECK(fp8.store_peak_bytes % fp8_block == 0);
  CHECK(fp8.store_peak_bytes % bf16_block != 0);
  // The same GPU bytes hold about twice the facts: more of a request's facts are found there.
  CHECK(fp8.gpu_hits > bf16.gpu_hits);
  CHECK(fp8.kv_blocks_total == bf16.kv_blocks_total);
  CHECK(summary_of(runs[1])["config"]["store"]["kv_dtype"] == "fp8");
}
