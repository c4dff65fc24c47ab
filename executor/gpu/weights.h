#pragma once
// @brief The decoder's weights and where they come from. Random weights now; a loader of real
// checkpoints implements WeightLoader later.

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "executor/model_config.h"

namespace inferscale {

/// One decoder layer. Projections are [out, in] (y = x W^T), QKV and gate/up fused.
struct LayerWeights {
  at::Tensor attn_norm;  // [hidden]; undefined once folded into wqkv
  at::Tensor wqkv;       // [(heads + 2 * kv_heads) * head_dim, hidden]: q | k | v
  at::Tensor wo;         // [hidden, heads * head_dim]
  at::Tensor mlp_norm;   // [hidden]; undefined once folded into wgate_up
  at::Tensor wgate_up;   // [2 * ffn, hidden]: gate | up
  at::Tensor wdown;      // [hidden, ffn]
};

struct ModelWeights {
  at::Tensor embed;  // [vocab, hidden]
  std::vector<LayerWeights> layers;
  at::Tensor final_norm;      // [hidden]
  at::Tensor lm_head;         // [vocab, hidden] (the embedding itself when tied)
  bool norms_folded = false;  // fold_norms has run: the layers' norms live in wqkv and wgate_up
};

/// Folds each layer's two RMSNorm weights into the projection that reads the norm's output:
/// RMSNorm(h) W^T = diag(1 / rms(h)) h (W diag(g))^T, so wqkv[:, j] *= attn_norm[j] and
/// wgate_up[:, j] *= mlp_norm[j], multiplied in fp32 and rounded once to the weights' dtype (new
/// tensors: other holders of the loaded ones see no change). The norms become undefined and
/// `norms_folded` true (a second call does nothing); the per-row 1 / rms is left to the kernels
/// that read the products (KvAppendParams::norm, SiluMulParams::norm). The final norm stays. Every
/// loader's weights pass through here when LlamaModel is built. A checkpoint stored wider than the
/// model's dtype has W rounded at load and W * g rounded again; a checkpoint in the model's dtype
/// (bf16 on the GPU, or any checkpoint in fp32) gets exactly one rounding of W * g.
void fold_norms(ModelWeights& w);

/// @brief Produces a model's weights in the given dtype on the given device.
class WeightLoader {
 public:
  virtual ~WeightLoader() = default;
  virtual ModelWeights load(const ModelConfig& model, const at::TensorOptions& options) = 0;
  virtual std::string describe() const = 0;
};

/// @brief Seeded Gaussian weights scaled so that activations stay O(1) through many layers:
/// projections N(0, 1/fan_in), output projections further divided by sqrt(2 * layers) (the
/// residual stream then grows to about twice its input variance), norms 1.
class RandomWeightLoader : public WeightLoader {
 public:
  explicit RandomWeightLoader(std::uint64_t seed) : seed_(seed) {}
  ModelWeights load(const ModelConfig& model, const at::TensorOptions& options) override;
  std::string describe() const override { return "random(seed=" + std::to_string(seed_) + ")"; }

 private:
  std::uint64_t seed_;
};

}  // namespace inferscale
