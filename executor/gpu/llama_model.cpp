#include "executor/gpu/llama_model.h"

#include <cmath>
#include <stdexcept>
#include <vector>

#include "kernels/reference/rope.h"

namespace inferscale {

LlamaModel::LlamaModel(const ModelConfig& config, ModelWeights weights, DeviceOps& ops,
                       at::ScalarType dtype, std::int32_t rope_positions)
    : config_(config),
      w_(std::move(weights)),
      ops_(ops),
      dtype_(dtype),
      style_(config.rope_layout == RopeLayout::kNeox ? RopeStyle::kNeox : RopeStyle::kGptj) {
  if (config.heads % config.kv_heads != 0 || config.head_dim % 2 != 0) {
    throw std::invalid_argument("LlamaModel: heads % kv_heads and head_dim % 2 must be 0");
  }
  fold_norms(w_);
  RopeTableSpec spec;
  spec.head_dim = std::int32_t(config.head_dim);
  spec.positions = rope_positions;
  spec.theta = config.rope_theta;
  spec.scaling_factor = config.rope_scaling_factor;
  spec.low_freq_factor = config.rope_low_freq_factor;
  spec.high_freq_factor = config.rope_high_freq_factor;
  spec.original_max_positions = std::int32_t(config.rope_original_max_positions);
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  at::Tensor cos = at::empty({rope_positions, std::int64_t(config.head_dim / 2)}, f32);
  at::Tensor sin = at::empty_like(cos);
  rope_table_build(spec, cos.data_ptr<float>(), sin.data_ptr<float>());
  cos_ = cos.to(ops.device());
  sin_ = sin.to(ops.device());
}

RopeTableView LlamaModel::rope_table() const {
  return {cos_.data_ptr<float>(), sin_.data_ptr<float>(), std::int32_t(cos_.size(0))};
}

KvCache LlamaModel::make_cache(std::int32_t rows) const {
  const auto o = at::TensorOptions().dtype(dtype_).device(ops_.device());
  const std::vector<std::int64_t> shape = {config_.layers, rows, config_.kv_heads,
                                           config_.head_dim};
  return KvCache{at::empty(shape, o), at::empty(shape, o)};
}

void LlamaModel::rms_norm(const at::Tensor& x, const at::Tensor& weight, at::Tensor& out) {
  RmsNormParams p;
  p.x = x.data_ptr();
  p.out = out.data_ptr();
  p.weight = weight.data_ptr();
  p.rows = x.size(0);
  p.cols = x.size(1);
  p.x_stride = x.stride(0);
  p.out_stride = out.stride(0);
  p.eps = float(config_.rms_eps);
  p.dtype = kernel_dtype(dtype_);
  ops_.rms_norm(p);
}

at::Tensor LlamaModel::attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                 const ForwardInputs& in, double scale) {
  if (in.split_rows == 0) return ops_.attention(q, k, v, in.attn, scale);
  const std::int64_t n = q.size(0);
  return at::cat(
      {ops_.attention(q.narrow(0, 0, in.split_rows), k, v, in.attn, scale),
       ops_.attention(q.narrow(0, in.split_rows, n - in.split_rows), k, v, in.attn_long, scale)});
}

at::Tensor LlamaModel::forward(const ForwardInputs& in, KvCache& cache, FactPool* pool,
                               bool pool_rotated) {
  const std::int64_t T = in.tokens, H = config_.heads, KV = config_.kv_heads, D = config_.head_dim,
                     F = config_.ffn;
  const auto opts = at::TensorOptions().dtype(dtype_).device(ops_.device());
  const double scale = 1.0 / std::sqrt(double(D));
  const bool store = pool != nullptr && in.pool_slots.defined();

  at::Tensor h = w_.embed.index_select(0, in.token_ids);  // [T, hidden], the residual stream
  at::Tensor q = at::empty({T, H, D}, opts);              // rotated queries
  at::Tensor act = at::empty({T, F}, opts);               // SwiGLU output

  // The layers' RMSNorms are folded (fold_norms): the QKV and gate/up products read h itself,
  // and kv_append and silu_mul scale their rows by 1 / rms of h's rows. h is updated in place
  // only after each of them has read it.
  RmsScaleView norm;
  norm.x = h.data_ptr();
  norm.stride = h.stride(0);
  norm.cols = h.size(1);
  norm.eps = float(config_.rms_eps);

  KvAppendParams kv;
  kv.q_out = q.data_ptr();
  kv.cache_slots = in.cache_slots.data_ptr<std::int32_t>();
  kv.pool_slots = store ? in.pool_slots.data_ptr<std::int32_t>() : nullptr;
  kv.pool_rotated = pool_rotated;
  kv.positions = in.positions.data_ptr<std::int32_t>();
  kv.table = rope_table();
  kv.tokens = std::int32_t(T);
  kv.heads = std::int32_t(H);
  kv.kv_heads = std::int32_t(KV);
  kv.head_dim = std::int32_t(D);
  kv.dtype = kernel_dtype(dtype_);
  kv.style = style_;
  kv.norm = norm;

  SiluMulParams sm;
  sm.out = act.data_ptr();
  sm.rows = T;
  sm.cols = F;
  sm.in_stride = 2 * F;
  sm.out_stride = F;
  sm.dtype = kv.dtype;
  sm.norm = norm;

  for (std::uint32_t l = 0; l < config_.layers; ++l) {
    const LayerWeights& lw = w_.layers[l];
    const at::Tensor qkv = ops_.linear(h, lw.wqkv);  // [T, (H + 2 KV) D]: q | k | v, unscaled
    const at::Tensor k_layer = cache.k.select(0, l), v_layer = cache.v.select(0, l);
    kv.qkv = qkv.data_ptr();
    kv.qkv_stride = qkv.stride(0);
    kv.cache_k = k_layer.data_ptr();
    kv.cache_v = v_layer.data_ptr();
    if (store) kv.pool = pool->layer_view(l);
    ops_.kv_append(kv);
    const at::Tensor attn = attention(q, k_layer, v_layer, in, scale);  // [T, H, D]
    ops_.linear_add(h, attn.view({T, H * D}), lw.wo);        // the residual add in the product
    const at::Tensor gate_up = ops_.linear(h, lw.wgate_up);  // [T, 2F]: gate | up, unscaled
    sm.gate_up = gate_up.data_ptr();
    ops_.silu_mul(sm);
    ops_.linear_add(h, act, lw.wdown);
  }
  if (in.samples == 0) return at::Tensor();
  const at::Tensor last = h.index_select(0, in.sample_rows);  // [samples, hidden]
  at::Tensor last_norm = at::empty_like(last);
  rms_norm(last, w_.final_norm, last_norm);
  return ops_.linear(last_norm, w_.lm_head);  // [samples, vocab]
}

void LlamaModel::warm_products(std::int32_t max_rows, std::int32_t bucket,
                               std::int32_t max_tokens) {
  if (max_rows <= 0 || w_.layers.empty()) return;
  const LayerWeights& lw = w_.layers.front();
  const auto opts = lw.wqkv.options();
  // Row counts: 1..max_rows, then (bucket > 1) the multiples of bucket past max_rows up to
  // max_tokens rounded up, the sizes of padded passes (GpuExecutor::pad), whose rows are never
  // sampled: no LM head for those.
  std::vector<std::int32_t> counts;
  for (std::int32_t m = 1; m <= max_rows; ++m) counts.push_back(m);
  if (bucket > 1) {
    for (std::int32_t m = (max_rows / bucket + 1) * bucket; m < max_tokens + bucket; m += bucket)
      counts.push_back(m);
  }
  const std::int64_t rows = counts.back();
  // The forward's operands are contiguous row-major activations: views of these keep that.
  const at::Tensor x = at::zeros({rows, lw.wqkv.size(1)}, opts);
  const at::Tensor attn = at::zeros({rows, lw.wo.size(1)}, opts);
  const at::Tensor act = at::zeros({rows, lw.wdown.size(1)}, opts);
  at::Tensor residual = at::zeros({rows, lw.wo.size(0)}, opts);
  for (const std::int32_t m : counts) {
    const at::Tensor xm = x.narrow(0, 0, m);
    at::Tensor hm = residual.narrow(0, 0, m);
    (void)ops_.linear(xm, lw.wqkv);
    ops_.linear_add(hm, attn.narrow(0, 0, m), lw.wo);
    (void)ops_.linear(xm, lw.wgate_up);
    ops_.linear_add(hm, act.narrow(0, 0, m), lw.wdown);
    if (m <= max_rows) (void)ops_.linear(xm, w_.lm_head);
  }
}

}  // namespace inferscale
