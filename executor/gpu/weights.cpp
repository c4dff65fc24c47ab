#include "executor/gpu/weights.h"

#include <cmath>

namespace inferscale {

namespace {

at::Tensor gaussian(std::vector<std::int64_t> shape, double std, const at::TensorOptions& o) {
  return at::randn(shape, o).mul_(std);
}

}  // namespace

ModelWeights RandomWeightLoader::load(const ModelConfig& m, const at::TensorOptions& o) {
  at::manual_seed(seed_);  // seeds the CPU and every CUDA generator
  const std::int64_t h = m.hidden, q = std::int64_t(m.heads) * m.head_dim,
                     kv = std::int64_t(m.kv_heads) * m.head_dim, f = m.ffn;
  const double out_scale = 1.0 / std::sqrt(2.0 * m.layers);
  ModelWeights w;
  w.embed = gaussian({m.vocab, h}, 1.0, o);
  for (std::uint32_t l = 0; l < m.layers; ++l) {
    LayerWeights lw;
    lw.attn_norm = at::ones({h}, o);
    lw.wqkv = gaussian({q + 2 * kv, h}, 1.0 / std::sqrt(double(h)), o);
    lw.wo = gaussian({h, q}, out_scale / std::sqrt(double(q)), o);
    lw.mlp_norm = at::ones({h}, o);
    lw.wgate_up = gaussian({2 * f, h}, 1.0 / std::sqrt(double(h)), o);
    lw.wdown = gaussian({h, f}, out_scale / std::sqrt(double(f)), o);
    w.layers.push_back(std::move(lw));
  }
  w.final_norm = at::ones({h}, o);
  w.lm_head = m.tie_embeddings ? w.embed : gaussian({m.vocab, h}, 1.0 / std::sqrt(double(h)), o);
  return w;
}

void fold_norms(ModelWeights& w) {
  if (w.norms_folded) return;
  auto fold = [](const at::Tensor& weight, const at::Tensor& norm) {
    // [out, hidden] * [hidden] scales column j by norm[j].
    return (weight.to(at::kFloat) * norm.to(at::kFloat)).to(weight.scalar_type()).contiguous();
  };
  for (LayerWeights& lw : w.layers) {
    lw.wqkv = fold(lw.wqkv, lw.attn_norm);
    lw.wgate_up = fold(lw.wgate_up, lw.mlp_norm);
    lw.attn_norm = at::Tensor();
    lw.mlp_norm = at::Tensor();
  }
  w.norms_folded = true;
}

}  // namespace inferscale
