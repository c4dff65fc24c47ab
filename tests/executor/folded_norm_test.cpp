// The model with its RMSNorms folded (fold_norms, and the per-row scale in kv_append and
// silu_mul) against a plain unfolded forward written here with ATen ops (RMSNorm, projections,
// rotary, causal GQA attention, SwiGLU), on weights whose norms are random and not 1: fp32 on
// the CPU, and bf16 on a CUDA GPU where one is present.
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "executor/gpu/device_ops.h"
#include "executor/gpu/gpu_executor.h"
#include "executor/gpu/weights.h"
#include "tests/catch.h"
#include "tests/executor/executor_test_util.h"

using namespace inferscale;
using namespace inferscale::test;

namespace {

/// Random weights with every norm drawn from N(1, 0.5) (a few negative); keeps what it loaded.
class NonUnitNormLoader : public WeightLoader {
 public:
  explicit NonUnitNormLoader(std::uint64_t seed) : seed_(seed) {}
  ModelWeights load(const ModelConfig& m, const at::TensorOptions& o) override {
    ModelWeights w = RandomWeightLoader(seed_).load(m, o);
    auto norm = [&] { return at::randn({std::int64_t(m.hidden)}, o).mul_(0.5).add_(1.0); };
    for (LayerWeights& lw : w.layers) {
      lw.attn_norm = norm();
      lw.mlp_norm = norm();
    }
    w.final_norm = norm();
    loaded = w;  // shares the tensors: folding must not change them
    return w;
  }
  std::string describe() const override { return "random, non-unit norms"; }
  ModelWeights loaded;

 private:
  std::uint64_t seed_;
};

/// Logits [vocab] of the last of `ids` (positions 0..) by the unfolded model, computed in
/// `dtype` on the weights' device. `cos`, `sin`: the model's rotary table [positions, d / 2].
at::Tensor unfolded_logits(const ModelConfig& m, const ModelWeights& w,
                           const std::vector<std::int32_t>& ids, const at::Tensor& cos,
                           const at::Tensor& sin, at::ScalarType dtype) {
  const std::int64_t n = std::int64_t(ids.size()), H = m.heads, KV = m.kv_heads, D = m.head_dim,
                     F = m.ffn;
  const at::Device dev = w.embed.device();
  auto f = [&](const at::Tensor& t) { return t.to(dtype); };
  auto rms_norm = [&](const at::Tensor& x, const at::Tensor& g) {
    return x * at::rsqrt(x.pow(2).mean(-1, true) + m.rms_eps) * f(g);
  };
  const at::Tensor pos = at::arange(n, at::TensorOptions().dtype(at::kLong).device(dev));
  const at::Tensor c = f(cos.index_select(0, pos)).unsqueeze(1);  // [n, 1, d / 2]
  const at::Tensor s = f(sin.index_select(0, pos)).unsqueeze(1);
  auto rope = [&](const at::Tensor& x) {  // [n, heads, d]
    if (m.rope_layout == RopeLayout::kNeox) {
      const at::Tensor a = x.narrow(-1, 0, D / 2), b = x.narrow(-1, D / 2, D / 2);
      return at::cat({a * c - b * s, b * c + a * s}, -1);
    }
    const at::Tensor pairs = x.reshape({n, x.size(1), D / 2, 2});
    const at::Tensor a = pairs.select(-1, 0), b = pairs.select(-1, 1);
    return at::stack({a * c - b * s, b * c + a * s}, -1).reshape({n, x.size(1), D});
  };
  const at::Tensor ids_t =
      at::tensor(std::vector<std::int64_t>(ids.begin(), ids.end()), at::kLong).to(dev);
  const at::Tensor causal =
      at::ones({n, n}, at::TensorOptions().dtype(at::kBool).device(dev)).triu(1);
  at::Tensor h = f(w.embed.index_select(0, ids_t));  // [n, hidden]
  for (const LayerWeights& lw : w.layers) {
    const at::Tensor qkv = at::mm(rms_norm(h, lw.attn_norm), f(lw.wqkv).t());
    const at::Tensor q = rope(qkv.narrow(1, 0, H * D).reshape({n, H, D}));
    const at::Tensor k = rope(qkv.narrow(1, H * D, KV * D).reshape({n, KV, D}));
    const at::Tensor v = qkv.narrow(1, (H + KV) * D, KV * D).reshape({n, KV, D});
    // Query head j reads KV head j / (H / KV).
    const at::Tensor kh = k.repeat_interleave(H / KV, 1).transpose(0, 1);  // [H, n, d]
    const at::Tensor vh = v.repeat_interleave(H / KV, 1).transpose(0, 1);
    at::Tensor scores = at::matmul(q.transpose(0, 1), kh.transpose(1, 2)) / std::sqrt(double(D));
    scores = scores.masked_fill(causal, -INFINITY);
    const at::Tensor attn = at::matmul(at::softmax(scores, -1), vh);  // [H, n, d]
    h = h + at::mm(attn.transpose(0, 1).reshape({n, H * D}), f(lw.wo).t());
    const at::Tensor gu = at::mm(rms_norm(h, lw.mlp_norm), f(lw.wgate_up).t());
    const at::Tensor act = at::silu(gu.narrow(1, 0, F)) * gu.narrow(1, F, F);
    h = h + at::mm(act, f(lw.wdown).t());
  }
  const at::Tensor last = rms_norm(h.narrow(0, n - 1, 1), w.final_norm);
  return at::mm(last, f(w.lm_head).t()).select(0, 0).to(at::kDouble).to(at::kCPU);
}

std::vector<std::int32_t> random_ids(std::uint32_t vocab, int n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::int32_t> d(0, std::int32_t(vocab) - 1);
  std::vector<std::int32_t> ids(static_cast<std::size_t>(n));
  for (auto& x : ids) x = d(rng);
  return ids;
}

struct Compared {
  double max_rel = 0, l2 = 0;
};

/// The executor's prefill logits of `ids` against the unfolded forward on the loaded weights.
Compared compare(GpuExecutor& ex, const NonUnitNormLoader& loader,
                 const std::vector<std::int32_t>& ids, at::ScalarType ref_dtype) {
  const LlamaModel& model = ex.model();
  const RopeTableView t = model.rope_table();
  const auto o = at::TensorOptions().dtype(at::kFloat).device(ex.ops().device());
  const std::int64_t half = model.config().head_dim / 2;
  const at::Tensor cos = at::from_blob(const_cast<float*>(t.cos), {t.positions, half}, o);
  const at::Tensor sin = at::from_blob(const_cast<float*>(t.sin), {t.positions, half}, o);
  const at::Tensor want = unfolded_logits(model.config(), loader.loaded, ids, cos, sin, ref_dtype);
  const at::Tensor got = ex.prefill_logits(ids).to(at::kDouble);
  return {max_rel_diff(got, want), rel_l2(got, want)};
}

}  // namespace

TEST_CASE("folded norms: fp32 logits equal the unfolded forward's with non-unit norm weights") {
  c10::InferenceMode guard;
  for (RopeLayout layout : {RopeLayout::kNeox, RopeLayout::kGptj}) {
    CAPTURE(layout == RopeLayout::kNeox ? "neox" : "gptj");
    auto loader = std::make_shared<NonUnitNormLoader>(21);
    GpuExecutorOptions o = cpu_options();
    o.model.rope_layout = layout;
    o.weights = loader;
    GpuExecutor ex(o);
    // The loaded weights are untouched (fold_norms made new tensors) and their norms not 1.
    REQUIRE(!loader->loaded.norms_folded);
    REQUIRE(loader->loaded.layers[0].attn_norm.defined());
    CHECK((loader->loaded.layers[0].attn_norm - 1).abs().max().item<double>() > 0.5);
    for (int n : {1, 5, 37}) {
      CAPTURE(n);
      const Compared r = compare(ex, *loader, random_ids(o.model.vocab, n, 100 + n), at::kDouble);
      CHECK(r.max_rel < 1e-5);
    }
  }
}

TEST_CASE("fold_norms scales the projections' columns once and only once") {
  c10::InferenceMode guard;
  NonUnitNormLoader loader(22);
  const ModelConfig m = tiny_model();
  ModelWeights w = loader.load(m, at::TensorOptions().dtype(at::kFloat));
  fold_norms(w);
  CHECK(w.norms_folded);
  CHECK(!w.layers[0].attn_norm.defined());
  CHECK(!w.layers[1].mlp_norm.defined());
  const LayerWeights& before = loader.loaded.layers[1];
  CHECK(at::equal(w.layers[1].wqkv, before.wqkv * before.attn_norm));
  CHECK(at::equal(w.layers[1].wgate_up, before.wgate_up * before.mlp_norm));
  CHECK(at::equal(w.layers[1].wo, before.wo));
  const at::Tensor once = w.layers[0].wqkv.clone();
  fold_norms(w);  // a second call does nothing
  CHECK(at::equal(w.layers[0].wqkv, once));
}

TEST_CASE("folded norms: bf16 logits on the GPU track the unfolded fp32 forward") {
  if (!cuda_ops_available()) INFERSCALE_SKIP("no CUDA device");
  c10::InferenceMode guard;
  for (RopeLayout layout : {RopeLayout::kNeox, RopeLayout::kGptj}) {
    CAPTURE(layout == RopeLayout::kNeox ? "neox" : "gptj");
    auto loader = std::make_shared<NonUnitNormLoader>(23);
    GpuExecutorOptions o;
    o.model = bf16_test_model(layout);
    o.device = "cuda";
    o.dtype = DType::kBF16;
    o.pool_bytes = 4 * FactPool::block_bytes(o.model, 2);
    o.kv_cache_tokens = 1024;
    o.weights = loader;
    GpuExecutor ex(o);
    for (int n : {1, 32, 300}) {
      CAPTURE(n);
      const Compared r = compare(ex, *loader, random_ids(o.model.vocab, n, 200 + n), at::kFloat);
      std::printf("folded bf16 vs unfolded fp32 (%s, %d tokens): max rel %.3e, rel L2 %.3e\n",
                  layout == RopeLayout::kNeox ? "neox" : "gptj", n, r.max_rel, r.l2);
      // bf16 rounding of activations and weights over 8 layers: the same comparison on the
      // CPU (references in bf16) gives 7e-3 to 8e-3 by both measures; a missing or misplaced
      // scale is of order 1.
      CHECK(r.l2 < 5e-2);
      CHECK(r.max_rel < 1e-1);
    }
  }
}
