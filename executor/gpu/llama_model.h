#pragma once
// @brief A Llama-family decoder (RMSNorm, rotary embedding, grouped-query attention, SwiGLU
// MLP, LM head) over a varlen batch, writing its keys and values into a KV cache of contiguous
// per-request row ranges. Matrix products go through libtorch (cuBLAS on CUDA); everything
// else through DeviceOps (kernels/ on CUDA, their references on the CPU). The two RMSNorms of a
// layer run no kernel of their own: their weights are folded into the QKV and gate/up
// projections (fold_norms) and their per-row scale into kv_append and silu_mul.

#include <ATen/ATen.h>

#include <cstdint>

#include "executor/gpu/device_ops.h"
#include "executor/gpu/fact_pool.h"
#include "executor/gpu/forward_batch.h"
#include "executor/gpu/weights.h"
#include "executor/model_config.h"

namespace inferscale {

/// Every layer's keys and values: rows are token slots, owned in ranges by running requests.
struct KvCache {
  at::Tensor k;  // [layers, rows, kv_heads, head_dim]
  at::Tensor v;  // [layers, rows, kv_heads, head_dim]
  std::int32_t rows() const { return std::int32_t(k.size(1)); }
};

class LlamaModel {
 public:
  /// `rope_positions`: rows of the rotary table (the largest |position| any rotation uses + 1).
  /// Folds the layers' norm weights into `weights` (fold_norms) unless already folded.
  LlamaModel(const ModelConfig& config, ModelWeights weights, DeviceOps& ops, at::ScalarType dtype,
             std::int32_t rope_positions);

  /// Runs every layer over `in`: K (rotated) and V go to the cache rows `in.cache_slots`; where
  /// `in.pool_slots` >= 0 they also go to the pool (K before RoPE, or after it when
  /// `pool_rotated`). Returns the logits of `in.sample_rows` [samples, vocab] (undefined when
  /// there are none).
  at::Tensor forward(const ForwardInputs& in, KvCache& cache, FactPool* pool, bool pool_rotated);

  /// Runs each distinct matrix product of a forward pass (the first layer's QKV, O, gate/up and
  /// down, and the LM head) once on zeros for every row count 1..`max_rows`, and with bucket > 1
  /// the four layer products for each multiple of `bucket` past max_rows up to max_tokens
  /// (rounded up), through the ops as the forward does: the BLAS libraries' per-shape choices
  /// are made now, not inside a step.
  void warm_products(std::int32_t max_rows, std::int32_t bucket = 0, std::int32_t max_tokens = 0);

  /// A KV cache of `rows` token slots for this model, on the ops' device.
  KvCache make_cache(std::int32_t rows) const;

  const ModelConfig& config() const { return config_; }
  at::ScalarType dtype() const { return dtype_; }
  RopeStyle rope_style() const { return style_; }
  /// The one rotary table (device): both native prefill and injection read it.
  RopeTableView rope_table() const;
  std::int32_t rope_positions() const { return std::int32_t(cos_.size(0)); }

 private:
  void rms_norm(const at::Tensor& x, const at::Tensor& weight, at::Tensor& out);
  /// One layer's attention over the forward's batch, in two calls when it is split.
  at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                       const ForwardInputs& in, double scale);

  ModelConfig config_;
  ModelWeights w_;
  DeviceOps& ops_;
  at::ScalarType dtype_;
  RopeStyle style_;
  at::Tensor cos_, sin_;  // [rope_positions, head_dim / 2] fp32, on the device
};

}  // namespace inferscale
