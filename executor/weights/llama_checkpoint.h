#pragma once
// @brief A Llama-family checkpoint on disk (GGUF, or safetensors with its config.json): the
// model's shape and each weight as fp32 in one layout, the Hugging Face one: projections
// [out, in], query and key rows of each head in rotate-half (NeoX) order.
//
// GGUF files converted by llama.cpp store the query and key projections with the rows of each
// head interleaved for its GPT-J-style rotary: HF row (h, t, i) (head h, half t, pair i < d/2)
// is GGUF row (h, i, t). Reading undoes it, so the model runs NeoX rotary exactly like the
// original; `unpermute_qk = false` keeps the GGUF rows and reports GPT-J rotary instead (the
// same logits: q.k is invariant under one permutation of both).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "executor/model_config.h"

namespace inferscale {

/// Which weight of the model.
enum class LlamaWeight {
  kEmbed,      // [vocab, hidden]
  kFinalNorm,  // [hidden]
  kLmHead,     // [vocab, hidden]; absent when tied to the embedding
  kAttnNorm,   // [hidden]
  kWq,         // [heads * head_dim, hidden]
  kWk,         // [kv_heads * head_dim, hidden]
  kWv,         // [kv_heads * head_dim, hidden]
  kWo,         // [hidden, heads * head_dim]
  kMlpNorm,    // [hidden]
  kWgate,      // [ffn, hidden]
  kWup,        // [ffn, hidden]
  kWdown,      // [hidden, ffn]
};

/// fp32 values, row-major.
struct HostTensor {
  std::vector<std::int64_t> shape;
  std::vector<float> data;
};

class LlamaCheckpoint {
 public:
  virtual ~LlamaCheckpoint() = default;
  const ModelConfig& config() const { return config_; }
  /// One weight (`layer` for the per-layer ones), checked against the config's shape. Throws
  /// InputError(file: tensor, ...) when it is missing or of another shape.
  virtual HostTensor read(LlamaWeight w, std::uint32_t layer = 0) const = 0;
  virtual std::string describe() const = 0;

 protected:
  ModelConfig config_;
};

/// Opens a GGUF file (general.architecture llama). InputError for other architectures, rope
/// scalings it does not model, or tensors it cannot decode.
std::unique_ptr<LlamaCheckpoint> open_gguf_checkpoint(const std::string& path,
                                                      bool unpermute_qk = true);
/// Opens a directory with config.json and one or more *.safetensors files (or one .safetensors
/// file with config.json beside it). model_type llama or mistral.
std::unique_ptr<LlamaCheckpoint> open_safetensors_checkpoint(const std::string& path);
/// By name: *.gguf, else safetensors.
std::unique_ptr<LlamaCheckpoint> open_checkpoint(const std::string& path);

/// Undoes llama.cpp's rotary row permutation of a [heads * head_dim, cols] projection in place.
void llama_unpermute_rows(float* data, std::uint32_t heads, std::uint32_t head_dim,
                          std::uint64_t cols);
/// The permutation itself (HF -> GGUF), for tests and writers.
void llama_permute_rows(float* data, std::uint32_t heads, std::uint32_t head_dim,
                        std::uint64_t cols);

/// Expected shape of a weight under a config.
std::vector<std::int64_t> llama_weight_shape(const ModelConfig& m, LlamaWeight w);
const char* llama_weight_name(LlamaWeight w);

}  // namespace inferscale
