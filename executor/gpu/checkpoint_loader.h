#pragma once
// @brief Real weights for the executor's model: a checkpoint on disk (GGUF or safetensors, read
// by executor/weights/) turned into the fused tensors of ModelWeights, in the executor's dtype on
// its device.

#include <memory>
#include <string>

#include "executor/gpu/weights.h"
#include "executor/weights/llama_checkpoint.h"

namespace inferscale {

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

}  // namespace inferscale
