#pragma once
// @brief CostModel: a roofline price for one scheduler step, from the model's shape and the
// GPU's datasheet (or calibrated) rates. Used by the cost-model executor and by the simulator
// for recompute costs.

#include "executor/executor.h"
#include "executor/model_config.h"

namespace inferscale {

/// The rates a step is priced with. From a GpuConfig (peak x efficiency) or a calibrated profile.
struct CostRates {
  double gemm_flops_per_s = 0;        // decoder-layer and LM-head matmuls
  double attention_flops_per_s = 0;   // QK^T and PV
  double hbm_bytes_per_s = 0;         // weights, KV reads/writes, injection copies
  double pcie_bytes_per_s = 0;        // host <-> GPU fact loads/offloads
  double step_overhead_ns = 0;        // fixed per step
  double per_seq_overhead_ns = 0;     // per sequence in the step (sampling, bookkeeping)
  double per_encode_overhead_ns = 0;  // per fact encode (a separate pass per fact)
  /// gemm_flops_per_s's factor by the step's tokens (GpuConfig::mfu_curve); empty: 1.
  std::vector<std::pair<double, double>> gemm_curve;
  /// hbm_bytes_per_s's factor for decode attention's KV reads by the step's decodes
  /// (GpuConfig::attention_mbu_curve); empty: 1.
  std::vector<std::pair<double, double>> decode_kv_curve;

  /// `fp8_weights`: matrix products at the GPU's fp8 peak where it has one (fp8_tflops > 0).
  static CostRates from_gpu(const GpuConfig& gpu, bool fp8_weights = false);
};

/// A replica's tensor parallelism: its degree and the all-reduce link between its GPUs.
struct TensorParallel {
  std::uint32_t tp = 1;
  double link_bytes_per_s = 0;  // one direction, per GPU, achieved
  double link_latency_ns = 0;   // per step of the ring

  /// The GPU's NVLink (or, without one, its PCIe link) at its achieved efficiency.
  static TensorParallel from_gpu(const GpuConfig& gpu, std::uint32_t tp);
  /// One ring all-reduce of `bytes` over tp GPUs: 2(p-1)/p * bytes / bw + 2(p-1) * latency
  /// (reduce-scatter then all-gather, p-1 steps each; Thakur, Rabenseifner and Gropp 2005).
  /// 0 when tp is 1.
  double allreduce_ns(double bytes) const;
};

/// Work a step does, counted from its plan (features of the roofline).
struct StepWork {
  double gemm_flops = 0;
  double attention_flops = 0;
  double hbm_bytes = 0;        // weights + KV traffic of the forward pass
  double decode_kv_bytes = 0;  // of hbm_bytes: the decodes' KV reads (context + 1 each)
  double inject_bytes = 0;     // KV gathered into request caches (read + write)
  double pcie_bytes = 0;
  double allreduce_bytes = 0;  // tensor parallel: one all-reduce's message (tokens x hidden)
  double allreduces = 0;       // tensor parallel: all-reduces in the pass (two per layer)
  double sequences = 0;
  double encodes = 0;
  double transfers = 0;  // facts moved between the host tier and the GPU (loads + offloads)
  double prefill_tokens = 0, decode_tokens = 0, encode_tokens = 0;
};

class CostModel {
 public:
  /// Prices one GPU of a replica of `parallel.tp` GPUs: the model's shapes split per GPU
  /// (ModelConfig's tp-argument functions) plus the all-reduces between them.
  CostModel(ModelConfig model, CostRates rates, TensorParallel parallel = {});
  StepWork work(const BatchPlan& plan) const;
  /// work() of a plan of `decodes` decode items alone whose contexts plus one each sum to
  /// `context_plus1`, bit for bit; false (w untouched) where work() would sum item by item.
  bool decode_work(std::uint32_t decodes, std::uint64_t context_plus1, StepWork& w) const;
  /// Step time in ns with its phase split.
  BatchResult price(const StepWork& w) const;
  /// Executor::price_decodes: price(work(plan)).duration_ns of those plans, bit for bit, with
  /// what does not change between them computed once.
  bool decode_durations(std::uint32_t decodes, std::uint64_t context_tokens,
                        std::span<SimTime> durations_ns) const;
  /// Time to encode one fact alone (its recompute cost for cost-aware policies).
  SimTime encode_cost_ns(std::uint32_t tokens, std::uint32_t context_tokens) const;
  /// Time to copy one fact of `bytes` from the host tier (PCIe only, no step overhead).
  SimTime load_cost_ns(std::uint64_t bytes) const;
  /// Bytes per token (per GPU) of stored fact KV (store.kv_dtype): an injection reads the fact
  /// in that format and writes it into the request's cache in the model's. The model's own
  /// bytes by default.
  void set_fact_kv_bytes(double bytes_per_token) { fact_kv_bytes_ = bytes_per_token; }
  const ModelConfig& model() const { return model_; }
  const CostRates& rates() const { return rates_; }
  const TensorParallel& parallel() const { return parallel_; }

 private:
  /// Weights read by a pass of `tokens` tokens (all, or for MoE the experts touched).
  double weight_read_bytes(double tokens) const {
    return moe_ ? model_.weight_read_bytes(tokens, parallel_.tp) : weight_bytes_;
  }
  ModelConfig model_;
  CostRates rates_;
  TensorParallel parallel_;
  bool moe_ = false;
  double kv_bytes_ = 0;
  double fact_kv_bytes_ = 0;  // set_fact_kv_bytes
  // The model's per-step constants, computed once.
  double layer_flops_ = 0, head_flops_ = 0, weight_bytes_ = 0;
  double decode_attention_flops_ = 0;  // attention_flops(1, 0): a decode's per context token + 1
  bool hbm_rate_positive_ = false, pcie_rate_positive_ = false;  // 0 / rate is +0 exactly
  /// gemm_flops_per_s x the curve's factor at each whole number of tokens up to the curve's
  /// last point (past it: the last entry); empty without a curve (gemm_flops_per_s throughout).
  std::vector<double> gemm_rate_by_tokens_;
  double gemm_rate(double tokens) const {
    if (gemm_rate_by_tokens_.empty()) return rates_.gemm_flops_per_s;
    const double last = double(gemm_rate_by_tokens_.size() - 1);
    return gemm_rate_by_tokens_[std::size_t(tokens < last ? tokens : last)];
  }
  /// hbm_bytes_per_s x decode_kv_curve's factor at each whole number of decodes up to the
  /// curve's last point (past it: the last entry); empty without a curve.
  std::vector<double> decode_kv_rate_by_decodes_;
  /// The memory term: `hbm_bytes` at the HBM rate, except its `decode_kv_bytes` at the
  /// decode-attention rate of `decodes` decodes where there is a curve.
  double memory_ns(double hbm_bytes, double decode_kv_bytes, double decodes) const {
    if (decode_kv_rate_by_decodes_.empty() || decode_kv_bytes == 0) {
      return hbm_bytes / rates_.hbm_bytes_per_s * 1e9;
    }
    const double last = double(decode_kv_rate_by_decodes_.size() - 1);
    const double kv_rate = decode_kv_rate_by_decodes_[std::size_t(decodes < last ? decodes : last)];
    return (hbm_bytes - decode_kv_bytes) / rates_.hbm_bytes_per_s * 1e9 +
           decode_kv_bytes / kv_rate * 1e9;
  }
};

/// @brief The cost-model executor: prices each plan; performs nothing.
class CostModelExecutor final : public Executor {
 public:
  explicit CostModelExecutor(CostModel model) : model_(std::move(model)) {}
  BatchResult execute(const BatchPlan& plan) override { return model_.price(model_.work(plan)); }
  std::string name() const override { return "cost_model"; }
  bool price_decodes(std::uint32_t decodes, std::uint64_t context_tokens,
                     std::span<SimTime> durations_ns) const override {
    return model_.decode_durations(decodes, context_tokens, durations_ns);
  }
  const CostModel& cost_model() const { return model_; }

 private:
  CostModel model_;
};

}  // namespace inferscale
