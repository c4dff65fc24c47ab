#pragma once
// @brief Model and GPU descriptions shared by the memory model, the cost model and the GPU
// executor, and the model presets' YAML (configs/models/*.yaml), their one source.

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
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
  /// Bytes per weight when the weights are stored narrower than the model computes (1: fp8
  /// weights, the experiment's `weights: fp8`); 0: dtype_bytes.
  std::uint32_t weight_bytes_per_param = 0;
  std::uint32_t weight_dtype_bytes() const {
    return weight_bytes_per_param > 0 ? weight_bytes_per_param : dtype_bytes;
  }
  /// Bytes per element of the KV cache when it is stored narrower than the model computes (1:
  /// an fp8 KV cache, the experiment's `kv_cache: fp8`, per-tensor scaled); 0: dtype_bytes.
  std::uint32_t kv_bytes_per_elem = 0;
  std::uint32_t kv_dtype_bytes() const {
    return kv_bytes_per_elem > 0 ? kv_bytes_per_elem : dtype_bytes;
  }
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

  // Mixture of experts (experts 0: a dense SwiGLU MLP of width ffn). Each MoE layer has
  // `experts` SwiGLU experts of width expert_ffn and a router; a token uses experts_active.
  std::uint32_t experts = 0;
  std::uint32_t experts_active = 0;
  std::uint32_t expert_ffn = 0;

  bool moe() const { return experts > 0; }

  /// KV heads a GPU holds at tensor-parallel degree `tp`: kv_heads / tp, or one (replicated on
  /// tp / kv_heads GPUs, as vLLM does) when there are fewer KV heads than GPUs.
  std::uint32_t kv_heads_per_gpu(std::uint32_t tp = 1) const {
    return kv_heads >= tp ? kv_heads / tp : 1;
  }
  /// K and V of one token over all layers on one GPU of a `tp`-way replica:
  /// 2 * layers * kv_heads_per_gpu(tp) * head_dim * kv_dtype_bytes().
  std::uint64_t kv_bytes_per_token(std::uint32_t tp = 1) const {
    return 2ull * layers * kv_heads_per_gpu(tp) * head_dim * kv_dtype_bytes();
  }
  /// Parameters on one GPU of a `tp`-way replica (embeddings, attention, MLP or experts, norms,
  /// LM head). Q, O, the MLP (each expert's width) and the vocabulary are split `tp` ways (rounded
  /// up); K and V follow kv_heads_per_gpu; norms and the MoE router are replicated.
  std::uint64_t parameters(std::uint32_t tp = 1) const {
    const std::uint64_t h = hidden, q = split(std::uint64_t(heads) * head_dim, tp),
                        kv = std::uint64_t(kv_heads_per_gpu(tp)) * head_dim;
    const std::uint64_t per_layer = h * q + 2 * h * kv + q * h + expert_parameters(tp) +
                                    dense_mlp_parameters(tp) + router_parameters() + 2 * h;
    const std::uint64_t embed = split(vocab, tp) * h;
    return layers * per_layer + embed + (tie_embeddings ? 0 : embed) + h;
  }
  std::uint64_t weight_bytes(std::uint32_t tp = 1) const {
    return parameters(tp) * weight_dtype_bytes();
  }
  /// Parameters a token uses on one GPU: parameters(tp) with experts_active experts per layer.
  std::uint64_t active_parameters(std::uint32_t tp = 1) const {
    if (!moe()) return parameters(tp);
    return parameters(tp) - layers * (expert_parameters(tp) / experts) * (experts - experts_active);
  }
  /// Bytes of all layers' expert weights on one GPU (0 for a dense model).
  std::uint64_t expert_weight_bytes(std::uint32_t tp = 1) const {
    return std::uint64_t(layers) * expert_parameters(tp) * weight_dtype_bytes();
  }
  /// Expected distinct experts a layer's `tokens` route to: E * (1 - (1 - a/E)^tokens), the
  /// expectation when each token picks its a experts uniformly at random (each expert is missed
  /// by one token with probability 1 - a/E, independently across tokens).
  double experts_touched(double tokens) const {
    if (!moe() || tokens <= 0) return 0;
    const double e = experts, a = experts_active;
    return e * (1.0 - std::pow(1.0 - a / e, tokens));
  }
  /// Weight bytes one GPU reads in a forward pass of `tokens` tokens: everything for a dense
  /// model; for a MoE model the shared weights plus the experts the tokens touch.
  double weight_read_bytes(double tokens, std::uint32_t tp = 1) const {
    if (tokens <= 0) return 0;
    if (!moe()) return double(weight_bytes(tp));
    const double experts_bytes = double(expert_weight_bytes(tp));
    return double(weight_bytes(tp)) - experts_bytes +
           experts_bytes * experts_touched(tokens) / double(experts);
  }
  /// Matmul FLOPs per token in the decoder layers on one GPU, excluding attention over the
  /// context (2 per multiply-add; a MoE layer counts its active experts and its router).
  double layer_flops_per_token(std::uint32_t tp = 1) const {
    const double h = hidden, q = double(split(std::uint64_t(heads) * head_dim, tp)),
                 kv = double(kv_heads_per_gpu(tp)) * head_dim;
    const double mlp = moe() ? double(experts_active) * 3 * h * double(split(expert_ffn, tp)) +
                                   double(router_parameters())
                             : 3 * h * double(split(ffn, tp));
    return 2.0 * layers * (h * q + 2 * h * kv + q * h + mlp);
  }
  /// FLOPs of the LM head for one sampled position on one GPU (vocabulary split tp ways).
  double lm_head_flops(std::uint32_t tp = 1) const {
    return 2.0 * double(split(vocab, tp)) * hidden;
  }
  /// Attention FLOPs (QK^T and PV) of `n` new tokens after `past` tokens, causal, on one GPU
  /// (heads / tp query heads).
  double attention_flops(double n, double past, std::uint32_t tp = 1) const {
    return 4.0 * layers * double(heads / tp) * head_dim * n * (past + (n + 1) / 2);
  }

 private:
  static std::uint64_t split(std::uint64_t n, std::uint32_t tp) { return (n + tp - 1) / tp; }
  std::uint64_t expert_parameters(std::uint32_t tp) const {
    return std::uint64_t(experts) * 3 * hidden * split(expert_ffn, tp);
  }
  std::uint64_t dense_mlp_parameters(std::uint32_t tp) const {
    return moe() ? 0 : 3ull * hidden * split(ffn, tp);
  }
  std::uint64_t router_parameters() const { return std::uint64_t(experts) * hidden; }
};

/// A GPU's datasheet figures plus efficiency factors for the roofline.
struct GpuConfig {
  std::string name;
  std::uint64_t memory_bytes = 0;
  double bf16_tflops = 0;          // dense peak
  double fp8_tflops = 0;           // dense fp8 peak; 0: no fp8 tensor cores
  double hbm_gbps = 0;             // GB/s
  double pcie_gbps = 0;            // host<->device, one direction, GB/s
  double step_overhead_us = 0;     // fixed cost of one scheduler step (launches, sampling, host)
  double per_seq_overhead_us = 5;  // per sequence in a step (sampling, bookkeeping)
  double mfu = 0.6;                // achieved fraction of peak FLOP/s for large GEMMs
  double mbu = 0.8;                // achieved fraction of HBM bandwidth
  double pcie_efficiency = 0.8;
  // GPU-to-GPU link for tensor-parallel all-reduces. nvlink_gen 0: none (PCIe peer to peer,
  // at pcie_gbps, is used instead).
  std::uint32_t pcie_gen = 0;  // 0: not stated
  std::uint32_t nvlink_gen = 0;
  double nvlink_gbps = 0;        // per GPU, one direction, GB/s
  double link_latency_us = 1;    // per step of a ring all-reduce (an estimate: calibrate)
  double link_efficiency = 0.8;  // achieved fraction of the link bandwidth
  double price_per_hour = 0;     // USD per GPU-hour, on demand (0: not stated); the planner's
  std::string price_source;      // where price_per_hour comes from, with its date
  /// Matrix-product efficiency by the step's tokens (the product's rows): points (tokens,
  /// factor of mfu) with tokens increasing; between two points the factor is linear in
  /// log2(tokens), before the first and past the last it is that point's. Empty: mfu at every
  /// size. Small products fill few rows of each tensor-core tile and reach less of the peak.
  std::vector<std::pair<double, double>> mfu_curve;
  /// Decode attention's KV reads by the step's decodes: points (decodes, factor of mbu), read
  /// as mfu_curve is. Empty: mbu at every size. A few sequences give the attention kernel
  /// too few blocks to keep every memory channel busy.
  std::vector<std::pair<double, double>> attention_mbu_curve;
  /// The factor of mfu at a step of `tokens` tokens (1 without a curve).
  double mfu_factor(double tokens) const { return curve_factor(mfu_curve, tokens); }
  /// The factor of mbu for the KV reads of a step of `decodes` decodes (1 without a curve).
  double attention_mbu_factor(double decodes) const {
    return curve_factor(attention_mbu_curve, decodes);
  }
  /// A curve's factor at x: linear in log2(x) between points, the end points' beyond them.
  static double curve_factor(const std::vector<std::pair<double, double>>& curve, double x);
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
