// Few-row matrix products in the model: on a CUDA GPU, prefill and decode steps of a few rows
// run their products on cuBLASLt (BlasPolicy kFewRowsLt) and give the logits of cuBLAS within
// the rounding of a different summation order; larger steps and the CPU keep libtorch's choice.
// Launching the layer's kernels with programmatic dependent launch
// (GpuExecutorOptions::programmatic_launch) changes no result.
#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "executor/gpu/device_ops.h"
#include "executor/gpu/gpu_executor.h"
#include "tests/catch.h"
#include "tests/executor/executor_test_util.h"

using namespace inferscale;
using namespace inferscale::test;

namespace {

struct Run {
  std::vector<at::Tensor> logits;                 // the prefill's, then each decode step's
  GemmCounts prefill, decodes;                    // products by implementation
  std::uint64_t split_kv = 0, graph_replays = 0;  // attention calls by split-KV; graph replays
};

enum class Path { kLibtorch, kFewRowsLt, kProgrammatic };

/// A prefill of `requests` prompts, then 4 decode steps of all of them. With `graphs`, split-KV
/// attention for every context and CUDA graphs (the decode steps share a shape: captured, then
/// replayed), as the bench runs them.
Run run_path(Path path, int requests, bool graphs = false) {
  GpuExecutorOptions o = gpu_bf16_options(11);
  if (graphs) {
    o.split_kv.min_context_tokens = 0;
    o.cuda_graphs.enabled = true;
  }
  o.programmatic_launch = path == Path::kProgrammatic;
  // cuBLAS for libtorch's products but on the few-row path (the executor's default takes few
  // rows to cuBLASLt).
  o.blas.library = path == Path::kFewRowsLt ? BlasLibrary::kFewRowsLt : BlasLibrary::kCublas;
  o.blas.lt_max_rows = 32;
  GpuExecutor ex(o);
  auto prompts = std::vector<PromptSpec>(std::size_t(requests));
  for (int i = 0; i < requests; ++i) prompts[std::size_t(i)].request = RequestId(i + 1);
  BatchPlan plan;
  for (const PromptSpec& p : prompts) add_prefill(plan, p, 0, p.computed_total());
  Run run;
  ex.execute(plan);
  run.prefill = ex.ops().gemm_counts();
  run.logits.push_back(ex.last_logits().clone());
  for (std::uint32_t step = 0; step < 4; ++step) {
    BatchPlan d;
    for (const PromptSpec& p : prompts) {
      d.decodes.push_back(DecodeItem{p.request, p.prompt_tokens() + step});
    }
    ex.execute(d);
    run.logits.push_back(ex.last_logits().clone());
  }
  run.decodes = ex.ops().gemm_counts();
  run.decodes.blas -= run.prefill.blas;
  run.decodes.blas_lt -= run.prefill.blas_lt;
  run.split_kv = ex.ops().attention_counts().split_kv;
  run.graph_replays = ex.ops().graph_replays();
  return run;
}

void check_same_logits(const Run& on, const Run& off) {
  REQUIRE(on.logits.size() == off.logits.size());
  for (std::size_t i = 0; i < on.logits.size(); ++i) {
    const at::Tensor a = on.logits[i].to(at::kDouble), b = off.logits[i].to(at::kDouble);
    const double rel = (a - b).norm().item<double>() / b.norm().item<double>();
    INFO("step " << i << ": relative L2 difference " << rel);
    CHECK(a.isfinite().all().item<bool>());
    CHECK(rel < 1e-2);
  }
}

}  // namespace

TEST_CASE("few-row products on cuBLASLt give cuBLAS's logits within rounding") {
  if (!cuda_ops_available()) INFERSCALE_SKIP("no CUDA device");
  const std::uint64_t layers = gpu_bf16_options(11).model.layers;
  const std::uint64_t per_forward = 4 * layers + 1;
  // At most 32 rows on cuBLASLt: one prompt (17 rows) throughout; three (51 rows) only in the
  // LM head of the prefill (3 sampled rows) and in the decode steps.
  for (const int requests : {1, 3}) {
    INFO(requests << " requests");
    const Run on = run_path(Path::kFewRowsLt, requests), off = run_path(Path::kLibtorch, requests);
    CHECK(off.prefill.blas_lt == 0);
    CHECK(off.decodes.blas_lt == 0);
    CHECK(on.prefill.blas == per_forward);
    CHECK(on.prefill.blas_lt == (requests == 1 ? per_forward : 1));
    CHECK(on.decodes.blas_lt == 4 * per_forward);
    check_same_logits(on, off);
  }
}

TEST_CASE("programmatic dependent launch leaves every step's logits bit-identical") {
  if (!cuda_ops_available()) INFERSCALE_SKIP("no CUDA device");
  for (const bool graphs : {false, true}) {
    for (const int requests : {1, 3}) {
      INFO(requests << " requests, " << (graphs ? "split-KV and CUDA graphs" : "eager"));
      const Run on = run_path(Path::kProgrammatic, requests, graphs);
      const Run off = run_path(Path::kLibtorch, requests, graphs);
      if (graphs) {  // the paths the bench takes were taken
        CHECK(on.split_kv > 0);
        CHECK(on.graph_replays > 0);
      }
      REQUIRE(on.logits.size() == off.logits.size());
      for (std::size_t i = 0; i < on.logits.size(); ++i) {
        INFO("step " << i);
        CHECK(at::equal(on.logits[i], off.logits[i]));
      }
    }
  }
}

TEST_CASE("the CPU ops multiply with libtorch whatever the BLAS policy") {
  auto ops = make_cpu_ops();
  BlasPolicy blas;
  blas.library = BlasLibrary::kFewRowsLt;
  ops->set_blas(blas);
  const at::Tensor x = at::randn({3, 64}), w = at::randn({40, 64});
  at::Tensor y = at::randn({3, 40});
  const at::Tensor want = y + at::mm(x, w.t());
  CHECK(at::allclose(ops->linear(x, w), at::mm(x, w.t())));
  ops->linear_add(y, x, w);
  CHECK(at::allclose(y, want, 1e-5, 1e-5));
  CHECK(ops->gemm_counts().blas_lt == 0);
  CHECK(ops->gemm_counts().blas == 2);
}
