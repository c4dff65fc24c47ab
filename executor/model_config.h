#pragma once
// @brief Model and GPU descriptions shared by the memory model, the cost model and the GPU
// executor, and the model presets' YAML (configs/models/*.yaml), their one source.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace YAML {
class Node;
}

namespace inferscale {

enum class RopeLayout { kNeox, kGptj };  // rotate-half pairs (i, i+d/2) | interleaved (2i, 2i+1)

/// A Llama-family decoder's shape.
struct ModelConfig {
  std::string name;
  std::uint32_t layers = 0;
  std::uint32_t hidden = 0;
  std::uint32_t heads = 0;
  std::uint32_t kv_heads = 0;
  std::uint32_t head_dim = 0;
  std::uint32_t ffn = 0;  // SwiGLU intermediate size
  std::uint32_t vocab = 0;
  std::uint32_t dtype_bytes = 2;  // bf16
  bool tie_embeddings = false;
  double rope_theta = 500000.0;
  RopeLayout rope_layout = RopeLayout::kNeox;
  // llama3 frequency scaling (factor 0: none)
  double rope_scaling_factor = 0.0;
  double rope_low_freq_factor = 1.0;
  double rope_high_freq_factor = 4.0;
  std::uint32_t rope_original_max_positions = 8192;
  double rms_eps = 1e-5;
  std::uint32_t max_positions = 131072;

  /// K and V of one token over all layers: 2 * layers * kv_heads * head_dim * dtype_bytes.
  std::uint64_t kv_bytes_per_token() const {
    return 2ull * layers * kv_heads * head_dim * dtype_bytes;
  }
  /// Parameters (embeddings, attention, MLP, norms, LM head).
  std::uint64_t parameters() const {
    const std::uint64_t h = hidden, q = std::uint64_t(heads) * head_dim,
                        kv = std::uint64_t(kv_heads) * head_dim;
    const std::uint64_t per_layer = h * q + 2 * h * kv + q * h + 3 * h * ffn + 2 * h;
    const std::uint64_t embed = std::uint64_t(vocab) * h;
    return layers * per_layer + embed + (tie_embeddings ? 0 : embed) + h;
  }
  std::uint64_t weight_bytes() const { return parameters() * dtype_bytes; }
  /// Matmul FLOPs per token in the decoder layers, excluding attention over the context
  /// (2 per multiply-add).
  double layer_flops_per_token() const {
    const double h = hidden, q = double(heads) * head_dim, kv = double(kv_heads) * head_dim;
    return 2.0 * layers * (h * q + 2 * h * kv + q * h + 3 * h * ffn);
  }
  /// FLOPs of the LM head for one sampled position.
  double lm_head_flops() const { return 2.0 * double(vocab) * hidden; }
  /// Attention FLOPs (QK^T and PV) of `n` new tokens after `past` tokens, causal.
  double attention_flops(double n, double past) const {
    return 4.0 * layers * double(heads) * head_dim * n * (past + (n + 1) / 2);
  }
};

/// A GPU's datasheet figures plus efficiency factors for the roofline.
struct GpuConfig {
  std::string name;
  std::uint64_t memory_bytes = 0;
  double bf16_tflops = 0;     // dense peak
  double hbm_gbps = 0;        // GB/s
  double pcie_gbps = 0;       // host<->device, one direction, GB/s
  double step_overhead_us = 0;  // fixed cost of one scheduler step (launches, sampling, host)
  double per_seq_overhead_us = 5;  // per sequence in a step (sampling, bookkeeping)
  double mfu = 0.6;           // achieved fraction of peak FLOP/s for large GEMMs
  double mbu = 0.8;           // achieved fraction of HBM bandwidth
  double pcie_efficiency = 0.8;
};

/// Where the presets live: ./configs when it has models/, else the source tree's configs.
std::string config_dir();
/// A preset's file: `name_or_path` itself when it is a path (has a '/' or ends in .yaml), else
/// config_dir()/<folder>/<name>.yaml.
std::string preset_path(const std::string& name_or_path, const std::string& folder);
/// Names of the presets in config_dir()/<folder>, sorted.
std::vector<std::string> preset_names(const std::string& folder);

/// Position of the value at a dotted key path ("" : the map itself), for errors:
/// "file:line:column: key.path".
using ModelWhere = std::function<std::string(const std::string& key_path)>;
/// @brief A model from a YAML map with the keys of configs/models/*.yaml; bad input is an
/// InputError at `where(key path)` saying what was expected.
ModelConfig parse_model_config(const YAML::Node& node, const ModelWhere& where);
/// @brief A model preset by name (configs/models/<name>.yaml) or path; InputError at `where`
/// listing the presets when there is no such file.
ModelConfig load_model_config(const std::string& name_or_path, const std::string& where);

}  // namespace inferscale
