#pragma once
// @brief Real weights for the executor's model: a checkpoint on disk (GGUF or safetensors, read
// by executor/weights/) turned into the fused tensors of ModelWeights, in the executor's dtype on
// its device.

#include <memory>
#include <string>

#include "executor/gpu/weights.h"
#include "executor/weights/llama_checkpoint.h"

namespace inferscale {

struct GpuExecutorOptions;

class CheckpointWeightLoader : public WeightLoader {
 public:
  explicit CheckpointWeightLoader(std::shared_ptr<const LlamaCheckpoint> checkpoint)
      : checkpoint_(std::move(checkpoint)) {}
  /// `model` must be the checkpoint's config (shapes are checked; std::invalid_argument if not).
  ModelWeights load(const ModelConfig& model, const at::TensorOptions& options) override;
  std::string describe() const override { return checkpoint_->describe(); }
  const ModelConfig& config() const { return checkpoint_->config(); }

 private:
  std::shared_ptr<const LlamaCheckpoint> checkpoint_;
};

/// Options of an fp32 CPU executor on a checkpoint's weights for plain prefills of up to `rows`
/// tokens (no fact pool): `inferscale eval logits` and the reference-logit tests.
GpuExecutorOptions checkpoint_cpu_options(std::shared_ptr<const LlamaCheckpoint> checkpoint,
                                          std::uint32_t rows);

}  // namespace inferscale
