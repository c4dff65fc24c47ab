#include "executor/gpu/checkpoint_loader.h"

#include "executor/gpu/gpu_executor.h"

#include <stdexcept>

namespace inferscale {

namespace {

/// fp32 host values -> a tensor of the target dtype and device (one rounding, on the host).
at::Tensor to_tensor(HostTensor t, const at::TensorOptions& o) {
  const at::Tensor host =
      at::from_blob(t.data.data(), t.shape, at::TensorOptions().dtype(at::kFloat)).clone();
  return host.to(o.dtype().toScalarType()).to(o.device()).contiguous();
}

}  // namespace

ModelWeights CheckpointWeightLoader::load(const ModelConfig& m, const at::TensorOptions& o) {
  const ModelConfig& c = checkpoint_->config();
  if (m.layers != c.layers || m.hidden != c.hidden || m.heads != c.heads ||
      m.kv_heads != c.kv_heads || m.head_dim != c.head_dim || m.ffn != c.ffn ||
      m.vocab != c.vocab || m.tie_embeddings != c.tie_embeddings ||
      m.rope_layout != c.rope_layout) {
    throw std::invalid_argument("CheckpointWeightLoader: the executor's model config is not " +
                                checkpoint_->describe() + "'s");
  }
  const LlamaCheckpoint& ck = *checkpoint_;
  ModelWeights w;
  w.embed = to_tensor(ck.read(LlamaWeight::kEmbed), o);
  for (std::uint32_t l = 0; l < m.layers; ++l) {
    LayerWeights lw;
    lw.attn_norm = to_tensor(ck.read(LlamaWeight::kAttnNorm, l), o);
    lw.wqkv = at::cat(
        {to_tensor(ck.read(LlamaWeight::kWq, l), o), to_tensor(ck.read(LlamaWeight::kWk, l), o),
         to_tensor(ck.read(LlamaWeight::kWv, l), o)},
        0);
    lw.wo = to_tensor(ck.read(LlamaWeight::kWo, l), o);
    lw.mlp_norm = to_tensor(ck.read(LlamaWeight::kMlpNorm, l), o);
    lw.wgate_up = at::cat({to_tensor(ck.read(LlamaWeight::kWgate, l), o),
                           to_tensor(ck.read(LlamaWeight::kWup, l), o)},
                          0);
    lw.wdown = to_tensor(ck.read(LlamaWeight::kWdown, l), o);
    w.layers.push_back(std::move(lw));
  }
  w.final_norm = to_tensor(ck.read(LlamaWeight::kFinalNorm), o);
  w.lm_head = m.tie_embeddings ? w.embed : to_tensor(ck.read(LlamaWeight::kLmHead), o);
  return w;
}

GpuExecutorOptions checkpoint_cpu_options(std::shared_ptr<const LlamaCheckpoint> checkpoint,
                                          std::uint32_t rows) {
  GpuExecutorOptions o;
  o.model = checkpoint->config();
  o.device = "cpu";
  o.dtype = DType::kF32;
  o.pool_bytes = 0;
  o.reserved_pool_tokens = 16;
  o.kv_cache_tokens = rows;
  o.rope_positions = std::int32_t(rows);
  o.weights = std::make_shared<CheckpointWeightLoader>(std::move(checkpoint));
  return o;
}

}  // namespace inferscale
