// bf16 on a CUDA GPU, end to end under condition (a): facts encoded after exactly the tokens
// that precede them, injected with Chunked RoPE, against a native prefill of the same prompt.
// Reports the largest logit difference in bf16 ulps. (The bit-identity of the rotation itself
// given the same pre-RoPE keys is checked kernel-level in tests/kernels/kernels_test.cpp.)
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "executor/gpu/device_ops.h"
#include "executor/gpu/gpu_executor.h"
#include "kernels/reference/numeric.h"
#include "tests/catch.h"
#include "tests/executor/executor_test_util.h"

using namespace inferscale;
using namespace inferscale::test;

namespace {

std::int64_t ordered_bf16(float f) {
  const std::uint16_t h = float_to_bf16(f);
  return (h & 0x8000u) ? -std::int64_t(h & 0x7fffu) : std::int64_t(h);
}

// Differences between logits that are bf16 values held in fp32, in bf16 ulps: the largest over
// all logits (near zero one ulp is tiny, so a sign change counts thousands), the largest over
// logits at least 1% of the largest in magnitude, and the largest absolute difference in ulps of
// the largest logit.
struct UlpReport {
  std::int64_t all = 0, significant = 0;
  double at_scale = 0;
};

UlpReport bf16_ulps(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor fa = a.contiguous(), fb = b.contiguous();
  const float* x = fa.data_ptr<float>();
  const float* y = fb.data_ptr<float>();
  const float scale = fb.abs().max().item<float>();
  const std::uint16_t s16 = float_to_bf16(scale);
  const float ulp_at_scale = bf16_to_float(std::uint16_t(s16 + 1)) - bf16_to_float(s16);
  UlpReport r;
  for (std::int64_t i = 0; i < fa.numel(); ++i) {
    const std::int64_t d = std::abs(ordered_bf16(x[i]) - ordered_bf16(y[i]));
    r.all = std::max(r.all, d);
    if (std::abs(y[i]) >= 0.01f * scale) r.significant = std::max(r.significant, d);
    r.at_scale = std::max(r.at_scale, double(std::abs(x[i] - y[i])) / ulp_at_scale);
  }
  return r;
}

struct Run {
  double rel_exact = 0, rel_alone = 0;  // max |a - b| / max |b|
  double l2_exact = 0, l2_alone = 0;    // ||a - b|| / ||b||
  UlpReport ulps;
  bool finite = false;
};

Run run(RopeLayout layout, RopeMode mode) {
  PromptSpec p;
  p.request = 500;
  p.header = 64;
  p.footer = 8;
  p.query = 24;
  for (FactId f = 0; f < 10; ++f) p.facts.push_back({9000 + f, 24});
  p.header_cached = true;
  auto src = std::make_shared<PrefixContextSource>(bf16_test_model(layout).vocab, p);
  Run out;
  for (bool exact : {true, false}) {
    GpuExecutorOptions o = gpu_bf16_options(3, layout);
    o.rope = mode;
    o.tokens = src;
    GpuExecutor ex(o);
    BatchPlan enc;
    for (std::size_t i = 0; i < p.facts.size(); ++i) {
      FactEncode e;
      e.fact = p.facts[i].id;
      e.tokens = p.facts[i].tokens;
      e.context_tokens = exact ? p.fact_position(i) : 0;
      enc.encodes.push_back(e);
    }
    ex.execute(enc);
    BatchPlan plan;
    add_prefill(plan, p, 0, p.computed_total());
    ex.execute(plan);
    const at::Tensor injected = ex.last_logits().select(0, 0).clone();
    const at::Tensor native = ex.prefill_logits(p.all_tokens(*src));
    const double rel = max_rel_diff(injected, native);
    if (exact) {
      out.rel_exact = rel;
      out.l2_exact = rel_l2(injected, native);
      out.ulps = bf16_ulps(injected, native);
      out.finite = injected.isfinite().all().item<bool>() && native.isfinite().all().item<bool>();
    } else {
      out.rel_alone = rel;
      out.l2_alone = rel_l2(injected, native);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("bf16 on the GPU: injection under condition (a) tracks a native prefill") {
  if (!cuda_ops_available()) INFERSCALE_SKIP("no CUDA device");
  for (RopeLayout layout : {RopeLayout::kNeox, RopeLayout::kGptj}) {
    for (RopeMode mode : {RopeMode::kPreRope, RopeMode::kDelta}) {
      const Run r = run(layout, mode);
      std::printf(
          "bf16 end-to-end (a), %s, %s: logits differ by at most %lld bf16 ulps (%lld "
          "over logits >= 1%% of the largest; %.1f ulps of the largest logit); max rel "
          "%.3e, rel L2 %.3e (w=0 for comparison: max rel %.3e, rel L2 %.3e)\n",
          layout == RopeLayout::kNeox ? "neox" : "gptj",
          mode == RopeMode::kPreRope ? "pre_rope" : "delta", (long long)r.ulps.all,
          (long long)r.ulps.significant, r.ulps.at_scale, r.rel_exact, r.l2_exact, r.rel_alone,
          r.l2_alone);
      std::fflush(stdout);
      CAPTURE(r.ulps.all, r.ulps.significant, r.ulps.at_scale, r.l2_exact, r.l2_alone);
      CHECK(r.finite);
      // bf16 GEMMs of different shapes round differently, so the logits are not bit-equal;
      // they must stay at bf16 noise, clearly below the effect of encoding the facts alone.
      CHECK(r.rel_exact < 5e-2);
      CHECK(r.l2_exact < 2e-2);
      CHECK(r.l2_exact * 2 < r.l2_alone);
    }
  }
}

TEST_CASE("bf16 on the GPU: a pass padded to a multiple of the row bucket keeps its logits") {
  if (!cuda_ops_available()) INFERSCALE_SKIP("no CUDA device");
  PromptSpec p;
  p.facts = {{31, 24, false}, {32, 24, false}, {33, 24, false}};
  const auto [plain_options, padded_options] = plain_and_padded(gpu_bf16_options(3), 256, 8, 64);
  GpuExecutor plain(plain_options), padded(padded_options);
  plain.warm_up();
  padded.warm_up();
  BatchPlan whole;
  add_prefill(whole, p, 0, p.computed_total());
  REQUIRE(p.computed_total() % 64 != 0);  // padded: the pass has rows nothing samples
  const BatchResult a = plain.execute(whole), b = padded.execute(whole);
  REQUIRE(a.tokens.size() == 1);
  CHECK(a.tokens == b.tokens);
  const at::Tensor la = plain.last_logits().to(at::kFloat),
                   lb = padded.last_logits().to(at::kFloat);
  CHECK(at::isfinite(lb).all().item<bool>());
  // Products of another row count may round differently in bf16: bf16 noise, no more.
  CHECK(rel_l2(lb, la) < 2e-2);
  // A decode step after it (not padded: one row) continues from the same cache.
  const BatchPlan next = decode_plan(p.request, p.prompt_tokens() + 1);
  const BatchResult da = plain.execute(next), db = padded.execute(next);
  CHECK(rel_l2(padded.last_logits().to(at::kFloat), plain.last_logits().to(at::kFloat)) < 2e-2);
  CHECK(da.tokens.size() == db.tokens.size());
}
