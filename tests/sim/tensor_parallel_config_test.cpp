// Tensor-parallel replicas in the experiment config: `tp`, memory checks per GPU, the KV-head
// split in the store and request KV, and the GPU presets' link figures.
#include "executor/cost_model/cost_model.h"
#include "sim/config/experiment.h"
#include "sim/executor_factory.h"
#include "sim/runner.h"
#include "tests/catch.h"
#include "tests/sim/config_errors.h"
#include "tests/sim/sim_test_util.h"
#include "traces/error.h"

using namespace inferscale;
using namespace inferscale::test;

namespace {

std::string base() {
  return "experiment: e\ntrace: " + source_path("tests/sim/data/golden.jsonl") + "\n";
}

std::string error_of(const std::string& name, const std::string& yaml) {
  const auto dir = temp_dir("tp_" + name);
  try {
    validate_experiment(load_experiment(write_text(dir / "c.yaml", yaml), {}));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

RunConfig run_of(const std::string& name, const std::string& yaml) {
  const auto dir = temp_dir("tp_run_" + name);
  const auto exp = load_experiment(write_text(dir / "c.yaml", yaml), {});
  validate_experiment(exp);
  return exp.runs.front();
}

}  // namespace

TEST_CASE("tp: a 70B model in bf16 does not fit one H200 and fits four") {
  const auto err = error_of("70b_tp1", base() + "model: llama-3.1-70b\ngpu: h200\n");
  INFO(err);
  CHECK(err.find("c.yaml:3:8: model") != std::string::npos);
  // 70.55e9 parameters x 2 bytes = 131.4 GiB of weights against 0.9 x 141 GB = 118.2 GiB.
  CHECK(err.find("does not fit on h200 at tp 1: weights per GPU 131.4") != std::string::npos);
  CHECK(err.find("usable 118.1") != std::string::npos);

  const RunConfig r = run_of("70b_tp4", base() + "model: llama-3.1-70b\ngpu: h200\ntp: 4\n");
  CHECK(r.tp == 4);
  CHECK(r.weight_bytes_per_gpu() == r.model.weight_bytes(4));
  CHECK(r.weight_bytes_per_gpu() < r.model.weight_bytes() / 4 + (1ull << 30));
  CHECK(r.kv_bytes_per_token_per_gpu() == 2ull * 80 * 2 * 128 * 2);  // 2 of 8 KV heads
  // Request KV per GPU: what is left of the GPU after its weight share, reserve and store.
  const double left = 0.9 * double(r.gpu.memory_bytes) - double(r.model.weight_bytes(4)) -
                      double(r.memory.activation_reserve_bytes) -
                      double(r.store.gpu.capacity_bytes);
  CHECK(double(r.request_kv_bytes()) == Approx(left).margin(1));
}

TEST_CASE("tp: bad degrees and executors are errors at the key") {
  const std::vector<ConfigErrorCase> cases = {
      {"three", base() + "tp: 3\n", ":3:5: tp", "expected 1, 2, 4 or 8 GPUs per replica, got 3"},
      {"sixteen", base() + "tp: 16\n", ":3:5: tp", "expected an integer in [1, 8]"},
      {"heads", base() + "model: smollm2-135m\ntp: 2\n", ":4:5: tp",
       "has 9 attention heads, not divisible by tp 2"},
      {"remote", base() + "tp: 2\nexecutor: {kind: remote, endpoints: [127.0.0.1:7070]}\n",
       ":3:5: tp", "tp 2 needs executor kind 'cost_model'"},
      {"moe_remote",
       base() + "model: qwen3-30b-a3b\nexecutor: {kind: remote, endpoints: [127.0.0.1:7070]}\n",
       ":3:8: model", "is a mixture of experts: only executor kind 'cost_model'"},
      {"fp8_weights_remote",
       base() + "weights: fp8\nexecutor: {kind: remote, endpoints: [127.0.0.1:7070]}\n",
       ":3:10: weights", "fp8 weights need executor kind 'cost_model'"},
      {"fp8_kv_remote",
       base() + "kv_cache: fp8\nexecutor: {kind: remote, endpoints: [127.0.0.1:7070]}\n",
       ":3:11: kv_cache", "an fp8 KV cache needs executor kind 'cost_model'"},
      {"kv_cache_int4", base() + "kv_cache: int4\n", ":3:11: kv_cache", "bf16"},
      {"curve_order",
       base() + "gpu: {memory: 80GB, bf16_tflops: 989, hbm_gbps: 3350, pcie_gbps: 64, "
                "mfu_curve: [[256, 0.8], [128, 0.5]]}\n",
       ":3:81: gpu.mfu_curve", "point 2: tokens must increase"},
      {"curve_factor",
       base() + "gpu: {memory: 80GB, bf16_tflops: 989, hbm_gbps: 3350, pcie_gbps: 64, "
                "mfu: 0.8, mfu_curve: [[256, 1.5]]}\n",
       ":3:91: gpu.mfu_curve", "point 1: the factor must be positive and mfu x factor at most 1"},
      {"curve_shape",
       base() + "gpu: {memory: 80GB, bf16_tflops: 989, hbm_gbps: 3350, pcie_gbps: 64, "
                "mfu_curve: [[256]]}\n",
       ":3:81: gpu.mfu_curve", "point 1: expected a list of [tokens, factor] points"},
      {"attention_curve_order",
       base() + "gpu: {memory: 80GB, bf16_tflops: 989, hbm_gbps: 3350, pcie_gbps: 64, "
                "attention_mbu_curve: [[4, 0.8], [2, 0.5]]}\n",
       ":3:91: gpu.attention_mbu_curve", "point 2: decodes must increase"},
      {"attention_curve_factor",
       base() + "gpu: {memory: 80GB, bf16_tflops: 989, hbm_gbps: 3350, pcie_gbps: 64, "
                "mbu: 0.9, attention_mbu_curve: [[1, 1.2]]}\n",
       ":3:101: gpu.attention_mbu_curve",
       "point 1: the factor must be positive and mbu x factor at most 1"},
      {"nvlink_no_bw",
       base() + "gpu: {memory: 80GB, bf16_tflops: 989, hbm_gbps: 3350, pcie_gbps: 64, "
                "nvlink_gen: 4}\n",
       ":3:6: gpu", "nvlink_gen 4 needs a positive nvlink_gbps"},
  };
  check_config_errors(cases, error_of);
}

TEST_CASE("fp8 weights and an fp8 KV cache halve their bytes, and only theirs") {
  const RunConfig bf16 = run_of("bf16", base() + "model: llama-3.1-70b\ntp: 2\n");
  const RunConfig w8 = run_of("w8", base() + "model: llama-3.1-70b\ntp: 2\nweights: fp8\n");
  const RunConfig kv8 = run_of("kv8", base() + "model: llama-3.1-70b\ntp: 2\nkv_cache: fp8\n");
  CHECK(w8.weight_bytes_per_gpu() * 2 == bf16.weight_bytes_per_gpu());
  CHECK(w8.kv_bytes_per_token_per_gpu() == bf16.kv_bytes_per_token_per_gpu());
  CHECK(kv8.kv_bytes_per_token_per_gpu() * 2 == bf16.kv_bytes_per_token_per_gpu());
  CHECK(kv8.weight_bytes_per_gpu() == bf16.weight_bytes_per_gpu());
  // The same request-KV bytes hold twice the tokens.
  CHECK(kv8.request_kv_bytes() == bf16.request_kv_bytes());
  CHECK(kv8.model.dtype_bytes == 2);  // attention and activations stay bf16
}

TEST_CASE("fp8 weights: the run's executor multiplies at the GPU's fp8 peak") {
  // A compute-bound step (8192 prompt tokens) on the run's own executor against the roofline
  // priced by hand at each peak: the executor once ignored `weights: fp8` for its rates.
  const RunConfig bf16 = run_of("exec_bf16", base() + "model: llama-3.1-8b\n");
  const RunConfig w8 = run_of("exec_w8", base() + "model: llama-3.1-8b\nweights: fp8\n");
  BatchPlan plan;
  PrefillItem p;
  p.query_tokens = p.prompt_tokens = p.computed_total = p.computed_now = 8192;
  p.first_chunk = p.last_chunk = true;
  plan.prefills.push_back(p);
  const auto priced = [&plan](const RunConfig& run, bool fp8_rates) {
    const CostModel m(run.model, CostRates::from_gpu(run.gpu, fp8_rates));
    return m.price(m.work(plan)).duration_ns;
  };
  const SimTime bf16_ns = make_executor(bf16, 0)->execute(plan).duration_ns;
  const SimTime w8_ns = make_executor(w8, 0)->execute(plan).duration_ns;
  CHECK(bf16_ns == priced(bf16, false));
  CHECK(w8_ns == priced(w8, true));
  CHECK(w8_ns < 0.6 * double(bf16_ns));  // h200: 1979 against 989 dense TFLOP/s
}

TEST_CASE("tp: KV heads replicate past the model's KV heads") {
  // Qwen3-30B-A3B has 4 KV heads: at tp 8 each GPU holds one, as at tp 4.
  const RunConfig t4 = run_of("moe_tp4", base() + "model: qwen3-30b-a3b\ntp: 4\n");
  const RunConfig t8 = run_of("moe_tp8", base() + "model: qwen3-30b-a3b\ntp: 8\n");
  CHECK(t4.kv_bytes_per_token_per_gpu() == 2ull * 48 * 1 * 128 * 2);
  CHECK(t8.kv_bytes_per_token_per_gpu() == t4.kv_bytes_per_token_per_gpu());
  CHECK(t8.weight_bytes_per_gpu() < t4.weight_bytes_per_gpu());
}

TEST_CASE("tp: GPU presets carry their interconnect") {
  struct Link {
    const char* gpu;
    std::uint32_t pcie_gen, nvlink_gen;
    double nvlink_gbps;
  };
  for (const Link& l :
       {Link{"a100-80g", 4, 3, 300}, Link{"h100", 5, 4, 450}, Link{"h200", 5, 4, 450},
        Link{"l40s", 4, 0, 0}, Link{"rtx-pro-6000", 5, 0, 0}, Link{"b200", 5, 5, 900},
        Link{"gb200", 0, 5, 900}}) {
    INFO(l.gpu);
    const GpuConfig g = load_gpu(l.gpu, "test");
    CHECK(g.pcie_gen == l.pcie_gen);
    CHECK(g.nvlink_gen == l.nvlink_gen);
    CHECK(g.nvlink_gbps == l.nvlink_gbps);
  }
  const GpuConfig b200 = load_gpu("b200", "test");
  CHECK(b200.memory_bytes == 180'000'000'000ull);
  CHECK(b200.bf16_tflops == 2250);
  CHECK(b200.hbm_gbps == 8000);
}

TEST_CASE("tp: a 70B run on four H200s prices and stores per GPU") {
  const auto dir = temp_dir("tp_run70b");
  const std::string yaml =
      "experiment: e\nseed: 3\nmodel: llama-3.1-70b\ngpu: h200\ntp: 4\n"
      "trace: {generate: {users: 10, requests: 60, k: 10, arrival: poisson, rate: 5}}\n"
      "serving: {k: 10}\n";
  const auto exp = load_experiment(write_text(dir / "c.yaml", yaml), {});
  RunnerOptions opts;
  opts.out_dir = (dir / "results").string();
  opts.progress = false;
  const auto outcomes = run_experiment(exp, opts);
  REQUIRE(outcomes.size() == 1);
  const auto& o = outcomes.front();
  CHECK(o.summary.requests == 60);
  // Request KV blocks from the per-GPU memory left and the per-GPU KV bytes of a token.
  const std::uint64_t blocks =
      o.config.request_kv_bytes() / (o.config.kv_bytes_per_token_per_gpu() * 16);
  const std::uint64_t header = (o.config.serving.header_tokens + 15) / 16;
  CHECK(o.summary.kv_blocks_total == blocks - header);
  const auto summary = read_text(std::filesystem::path(o.dir) / "summary.json");
  CHECK(summary.find("\"tp\": 4") != std::string::npos);
  std::filesystem::remove_all(dir);
}
