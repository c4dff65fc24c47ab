// The skinny matrix product in the model (SkinnyGemmPolicy): on a CUDA GPU, prefill and decode
// steps of a few rows run their products on the skinny kernel and give the logits of cuBLAS
// within the rounding of a different summation order; larger steps and the CPU keep libtorch's
// product.
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
  std::vector<at::Tensor> logits;  // the prefill's, then each decode step's
  GemmCounts prefill, decodes;     // products by implementation
};

/// A prefill of `requests` prompts, then 4 decode steps of all of them.
Run skinny_run(bool skinny, int requests) {
  GpuExecutorOptions o = gpu_bf16_options(11);
  o.skinny_gemm.enabled = skinny;
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
  run.decodes.skinny -= run.prefill.skinny;
  run.decodes.blas -= run.prefill.blas;
  return run;
}

}  // namespace

TEST_CASE("skinny products give cuBLAS's logits within rounding, only for steps of few rows") {
  if (!cuda_ops_available()) INFERSCALE_SKIP("no CUDA device");
  const std::uint64_t layers = gpu_bf16_options(11).model.layers;
  const std::uint64_t per_forward = 4 * layers + 1;  // QKV, O, gate/up, down; the LM head
  // One prompt of 17 tokens: every product is skinny. Three: 51 rows, the prefill's products go
  // to cuBLAS except the LM head's (3 sampled rows); decode steps (3 rows) are skinny.
  for (const int requests : {1, 3}) {
    INFO(requests << " requests");
    const Run on = skinny_run(true, requests), off = skinny_run(false, requests);
    CHECK(off.prefill.skinny == 0);
    CHECK(off.decodes.skinny == 0);
    CHECK(on.decodes.skinny == 4 * per_forward);
    CHECK(on.decodes.blas == 0);
    if (requests == 1) {
      CHECK(on.prefill.skinny == per_forward);
    } else {
      CHECK(on.prefill.skinny == 1);
      CHECK(on.prefill.blas == 4 * layers);
    }
    REQUIRE(on.logits.size() == off.logits.size());
    for (std::size_t i = 0; i < on.logits.size(); ++i) {
      const at::Tensor a = on.logits[i].to(at::kDouble), b = off.logits[i].to(at::kDouble);
      const double rel = (a - b).norm().item<double>() / b.norm().item<double>();
      INFO("step " << i << ": relative L2 difference " << rel);
      CHECK(a.isfinite().all().item<bool>());
      CHECK(rel < 1e-2);
    }
  }
}

TEST_CASE("the CPU ops multiply with libtorch whatever the skinny policy") {
  auto ops = make_cpu_ops();
  const at::Tensor x = at::randn({3, 64}), w = at::randn({40, 64});
  at::Tensor y = at::randn({3, 40});
  const at::Tensor want = y + at::mm(x, w.t());
  CHECK(at::allclose(ops->linear(x, w), at::mm(x, w.t())));
  ops->linear_add(y, x, w);
  CHECK(at::allclose(y, want, 1e-5, 1e-5));
  CHECK(ops->gemm_counts().skinny == 0);
  CHECK(ops->gemm_counts().blas == 2);
}
