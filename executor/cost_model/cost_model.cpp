#include "executor/cost_model/cost_model.h"

#include <algorithm>
#include <cmath>

namespace inferscale {

namespace {

/// The longest step a price may be (2^60 ns, 36 years): prices saturate there, so that a step
/// of 2^32 - 1 tokens is absurdly long instead of negative, and adding a few such prices to a
/// virtual time cannot overflow.
constexpr SimTime kMaxPriceNs = SimTime{1} << 60;

/// std::llround without the library call, for the step prices computed at every step:
/// x - trunc(x) is exact in binary floating point, so comparing it with one half rounds halves
/// away from zero exactly as llround does. Values beyond +-kMaxPriceNs saturate; NaN is 0.
SimTime round_ns(double x) {
  if (!(std::fabs(x) < 0x1p62)) {
    if (std::isnan(x)) return 0;
    return x > 0 ? kMaxPriceNs : -kMaxPriceNs;
  }
  const auto t = static_cast<SimTime>(x);  // toward zero
  const double frac = x - static_cast<double>(t);
  // Without branches: which way a price's fraction goes is a coin toss for the predictor.
  const SimTime r = t + static_cast<SimTime>(frac >= 0.5) - static_cast<SimTime>(frac <= -0.5);
  return std::clamp(r, -kMaxPriceNs, kMaxPriceNs);
}

/// Below this, integers are exact doubles and sums of them are exact in any order.
constexpr double kExactDoubleBound = 0x1p53;

/// Whether decode sums of these sizes are exact (see CostModel::work).
bool exact_decode_sums(double attention, double hbm, std::uint64_t context_plus1) {
  return attention < kExactDoubleBound && hbm < kExactDoubleBound &&
         double(context_plus1) < kExactDoubleBound;
}

/// `rate` x the curve's factor at each whole number 0 .. the curve's last point (rounded up);
/// empty without a curve.
std::vector<double> rate_table(const std::vector<std::pair<double, double>>& curve, double rate) {
  std::vector<double> table;
  if (curve.empty()) return table;
  table.resize(std::size_t(std::ceil(curve.back().first)) + 1);
  for (std::size_t x = 0; x < table.size(); ++x) {
    table[x] = rate * GpuConfig::curve_factor(curve, double(x));
  }
  return table;
}

}  // namespace

CostRates CostRates::from_gpu(const GpuConfig& gpu, bool fp8_weights) {
  CostRates r;
  const double gemm_tflops = fp8_weights && gpu.fp8_tflops > 0 ? gpu.fp8_tflops : gpu.bf16_tflops;
  r.gemm_flops_per_s = gemm_tflops * 1e12 * gpu.mfu;
  // Flash attention reaches a lower fraction of peak than large GEMMs do.
  r.attention_flops_per_s = gpu.bf16_tflops * 1e12 * gpu.mfu * 0.7;
  r.hbm_bytes_per_s = gpu.hbm_gbps * 1e9 * gpu.mbu;
  r.pcie_bytes_per_s = gpu.pcie_gbps * 1e9 * gpu.pcie_efficiency;
  r.step_overhead_ns = gpu.step_overhead_us * 1e3;
  r.per_seq_overhead_ns = gpu.per_seq_overhead_us * 1e3;
  r.per_encode_overhead_ns = 0;
  r.gemm_curve = gpu.mfu_curve;
  r.decode_kv_curve = gpu.attention_mbu_curve;
  return r;
}

TensorParallel TensorParallel::from_gpu(const GpuConfig& gpu, std::uint32_t tp) {
  TensorParallel p;
  p.tp = tp;
  const double gbps = gpu.nvlink_gen > 0 && gpu.nvlink_gbps > 0 ? gpu.nvlink_gbps : gpu.pcie_gbps;
  p.link_bytes_per_s = gbps * 1e9 * gpu.link_efficiency;
  p.link_latency_ns = gpu.link_latency_us * 1e3;
  return p;
}

double TensorParallel::allreduce_ns(double bytes) const {
  if (tp <= 1 || bytes <= 0) return 0;
  const double p = tp;
  return 2.0 * (p - 1) / p * bytes / link_bytes_per_s * 1e9 + 2.0 * (p - 1) * link_latency_ns;
}

CostModel::CostModel(ModelConfig model, CostRates rates, TensorParallel parallel)
    : model_(std::move(model)),
      rates_(rates),
      parallel_(parallel),
      moe_(model_.moe()),
      kv_bytes_(double(model_.kv_bytes_per_token(parallel_.tp))),
      fact_kv_bytes_(kv_bytes_),
      layer_flops_(model_.layer_flops_per_token(parallel_.tp)),
      head_flops_(model_.lm_head_flops(parallel_.tp)),
      weight_bytes_(double(model_.weight_bytes(parallel_.tp))),
      decode_attention_flops_(model_.attention_flops(1, 0, parallel_.tp)),
      hbm_rate_positive_(rates_.hbm_bytes_per_s > 0),
      pcie_rate_positive_(rates_.pcie_bytes_per_s > 0) {
  gemm_rate_by_tokens_ = rate_table(rates_.gemm_curve, rates_.gemm_flops_per_s);
  decode_kv_rate_by_decodes_ = rate_table(rates_.decode_kv_curve, rates_.hbm_bytes_per_s);
}

StepWork CostModel::work(const BatchPlan& plan) const {
  // Accumulated in locals and stored once: zeroing the struct up front cost more than a
  // one-decode step's arithmetic.
  double prefill_tokens = 0, decode_tokens = 0, encode_tokens = 0;
  double attention_flops = 0, hbm_bytes = 0, inject_bytes = 0, pcie_bytes = 0, encodes = 0;
  double decode_kv_bytes = 0;
  double samples = 0;
  std::uint64_t inject_tokens = 0;
  for (const auto& p : plan.prefills) {
    const double n = p.computed_now, past = p.present_tokens;
    prefill_tokens += n;
    attention_flops += model_.attention_flops(n, past, parallel_.tp);
    hbm_bytes += (past + n) * kv_bytes_;  // read the context once (flash), write the new KV
    if (p.last_chunk) samples += 1;
    if (p.first_chunk) {
      for (auto i = p.facts_begin; i < p.facts_end; ++i) {
        const auto& f = plan.prompt_facts[i];
        inject_tokens += f.inject ? f.tokens : 0;
      }
    }
  }
  if (inject_tokens > 0) {
    // Read in the stored format, written in the model's. Each fact's term is an integer, so
    // below 2^53 one product of the summed tokens is the per-fact sum bit for bit (as for the
    // decodes below).
    const double per_token = fact_kv_bytes_ + kv_bytes_;
    const double total = double(inject_tokens) * per_token;
    if (total < kExactDoubleBound && double(inject_tokens) < kExactDoubleBound) {
      inject_bytes = total;
    } else {
      for (const auto& p : plan.prefills) {
        if (!p.first_chunk) continue;
        for (auto i = p.facts_begin; i < p.facts_end; ++i) {
          const auto& f = plan.prompt_facts[i];
          if (f.inject) inject_bytes += f.tokens * per_token;
        }
      }
    }
  }
  if (!plan.decodes.empty()) {
    // Every term is an integer (a decode's attention FLOPs and KV bytes are integer multiples of
    // its context + 1), so while the sums stay below 2^53 the floating-point sum is exact in any
    // order: one integer sum of the contexts gives the per-item loop's result bit for bit.
    std::uint64_t context_plus1 = 0;
    for (const auto& d : plan.decodes) context_plus1 += std::uint64_t(d.context_tokens) + 1;
    const double n = double(plan.decodes.size());
    // attention_flops(1, c) is attention_flops(1, 0) * (c + 1).
    const double attention = attention_flops + decode_attention_flops_ * double(context_plus1);
    const double hbm = hbm_bytes + double(context_plus1) * kv_bytes_;
    if (exact_decode_sums(attention, hbm, context_plus1)) {
      attention_flops = attention;
      hbm_bytes = hbm;
      decode_kv_bytes = double(context_plus1) * kv_bytes_;
    } else {
      for (const auto& d : plan.decodes) {
        attention_flops += model_.attention_flops(1, d.context_tokens, parallel_.tp);
        hbm_bytes += (double(d.context_tokens) + 1) * kv_bytes_;
        decode_kv_bytes += (double(d.context_tokens) + 1) * kv_bytes_;
      }
    }
    decode_tokens = n;
    samples += n;
  }
  if (!plan.encodes.empty()) {
    // Integer terms again: attention_flops(n, 0) is attention_flops(1, 0) / 2 * n * (n + 1).
    // With n below 2^26 and fewer than 2^11 encodes the integer sums cannot wrap.
    std::uint64_t stored_tokens = 0, computed_tokens = 0, pairs = 0, any_n = 0;
    for (const auto& e : plan.encodes) {
      const std::uint64_t n = std::uint64_t(e.tokens) + e.context_tokens;
      stored_tokens += e.tokens;
      computed_tokens += n;
      pairs += n * (n + 1);
      any_n |= n;
    }
    const double attention = attention_flops + 0.5 * decode_attention_flops_ * double(pairs);
    const double hbm = hbm_bytes + double(stored_tokens) * kv_bytes_;
    if (any_n < (1u << 26) && plan.encodes.size() < (1u << 11) && attention < kExactDoubleBound &&
        hbm < kExactDoubleBound) {
      attention_flops = attention;
      hbm_bytes = hbm;
      encode_tokens = double(computed_tokens);
      encodes = double(plan.encodes.size());
    } else {
      for (const auto& e : plan.encodes) {
        const double n = double(e.tokens) + e.context_tokens;
        encode_tokens += n;
        attention_flops += model_.attention_flops(n, 0, parallel_.tp);
        hbm_bytes += e.tokens * kv_bytes_;
        encodes += 1;
      }
    }
  }
  for (const auto& l : plan.loads) pcie_bytes += double(l.bytes);
  for (const auto& o : plan.offloads) pcie_bytes += double(o.bytes);
  const double tokens = prefill_tokens + decode_tokens + encode_tokens;
  if (tokens > 0) hbm_bytes += weight_read_bytes(tokens);
  StepWork w;
  if (parallel_.tp > 1 && tokens > 0) {
    // Megatron-style splits: one all-reduce after attention's output projection and one after
    // the MLP's down projection, each of the pass's hidden states.
    w.allreduce_bytes = tokens * double(model_.hidden) * double(model_.dtype_bytes);
    w.allreduces = 2.0 * double(model_.layers);
  }
  w.gemm_flops = tokens * layer_flops_ + samples * head_flops_;
  w.attention_flops = attention_flops;
  w.hbm_bytes = hbm_bytes;
  w.decode_kv_bytes = decode_kv_bytes;
  w.inject_bytes = inject_bytes;
  w.pcie_bytes = pcie_bytes;
  w.sequences = double(plan.prefills.size() + plan.decodes.size());
  w.encodes = encodes;
  w.transfers = double(plan.loads.size() + plan.offloads.size());
  w.prefill_tokens = prefill_tokens;
  w.decode_tokens = decode_tokens;
  w.encode_tokens = encode_tokens;
  return w;
}

bool CostModel::decode_work(std::uint32_t decodes, std::uint64_t context_plus1, StepWork& w) const {
  // work()'s arithmetic for such a plan, with its zero terms left out (0 + x is x exactly).
  const double attention = decode_attention_flops_ * double(context_plus1);
  const double hbm = double(context_plus1) * kv_bytes_;
  if (!exact_decode_sums(attention, hbm, context_plus1)) return false;
  const double n = double(decodes);
  w = StepWork{};
  w.gemm_flops = n * layer_flops_ + n * head_flops_;
  w.attention_flops = attention;
  w.hbm_bytes = decodes > 0 ? hbm + weight_read_bytes(n) : hbm;
  w.decode_kv_bytes = hbm;
  if (parallel_.tp > 1 && decodes > 0) {
    w.allreduce_bytes = n * double(model_.hidden) * double(model_.dtype_bytes);
    w.allreduces = 2.0 * double(model_.layers);
  }
  w.sequences = n;
  w.decode_tokens = n;
  return true;
}

BatchResult CostModel::price(const StepWork& w) const {
  BatchResult r;
  const double tokens = w.prefill_tokens + w.decode_tokens + w.encode_tokens;
  const double gemm_ns = w.gemm_flops / gemm_rate(tokens) * 1e9;
  const double attn_ns = w.attention_flops / rates_.attention_flops_per_s * 1e9;
  const double mem_ns = memory_ns(w.hbm_bytes, w.decode_kv_bytes, w.decode_tokens);
  // The all-reduces sit between the layers' matmuls: not overlapped with compute or HBM.
  const double comm_ns =
      w.allreduces == 0 ? 0.0 : w.allreduces * parallel_.allreduce_ns(w.allreduce_bytes);
  const double forward_ns = std::max(gemm_ns + attn_ns, mem_ns) + comm_ns;
  // Zero work over a positive rate is +0 exactly: most steps move nothing over PCIe and inject
  // nothing, and a division is the dearest instruction here.
  const double inject_ns = w.inject_bytes == 0 && hbm_rate_positive_
                               ? 0.0
                               : w.inject_bytes / rates_.hbm_bytes_per_s * 1e9;
  const double pcie_ns =
      w.pcie_bytes == 0 && pcie_rate_positive_ ? 0.0 : w.pcie_bytes / rates_.pcie_bytes_per_s * 1e9;
  const bool idle = forward_ns == 0 && inject_ns == 0 && pcie_ns == 0;
  const double overhead_ns = idle ? 0
                                  : rates_.step_overhead_ns +
                                        w.sequences * rates_.per_seq_overhead_ns +
                                        w.encodes * rates_.per_encode_overhead_ns;
  // Split the forward pass over its phases by token count (a phase of no tokens gets +0 when
  // the forward time is finite, without the division).
  const bool finite = std::isfinite(forward_ns);
  auto share = [&](double t) {
    if (t == 0 && finite) return 0.0;
    return tokens > 0 ? forward_ns * t / tokens : 0.0;
  };
  r.phases.prefill_ns = round_ns(share(w.prefill_tokens));
  r.phases.decode_ns = round_ns(share(w.decode_tokens));
  r.phases.encode_ns = round_ns(share(w.encode_tokens));
  r.phases.inject_ns = round_ns(inject_ns);
  r.phases.load_ns = round_ns(pcie_ns);
  r.phases.overhead_ns = round_ns(overhead_ns);
  r.duration_ns = round_ns(forward_ns + inject_ns + pcie_ns + overhead_ns);
  return r;
}

bool CostModel::decode_durations(std::uint32_t decodes, std::uint64_t context_tokens,
                                 std::span<SimTime> durations_ns) const {
  // price(w) of decode_work's w: what depends on the decodes' count alone, once.
  StepWork w;
  if (!decode_work(decodes, context_tokens + decodes, w)) return false;
  const double gemm_ns = w.gemm_flops / gemm_rate(w.decode_tokens) * 1e9;
  const double comm_ns =
      w.allreduces == 0 ? 0.0 : w.allreduces * parallel_.allreduce_ns(w.allreduce_bytes);
  const double decode_weights = decodes > 0 ? weight_read_bytes(double(decodes)) : 0.0;
  const double inject_ns = hbm_rate_positive_ ? 0.0 : w.inject_bytes / rates_.hbm_bytes_per_s * 1e9;
  const double pcie_ns = pcie_rate_positive_ ? 0.0 : w.pcie_bytes / rates_.pcie_bytes_per_s * 1e9;
  const double busy_overhead_ns = rates_.step_overhead_ns +
                                  w.sequences * rates_.per_seq_overhead_ns +
                                  w.encodes * rates_.per_encode_overhead_ns;
  // decode_work's sums grow with the contexts: exact for the last step, exact for all.
  StepWork last;
  if (!durations_ns.empty() &&
      !decode_work(decodes, context_tokens + durations_ns.size() * decodes, last)) {
    return false;
  }
  std::uint64_t context_plus1 = context_tokens + decodes;
  for (SimTime& out : durations_ns) {
    // decode_work's attention_flops and hbm_bytes, as it computes them.
    const double attention = decode_attention_flops_ * double(context_plus1);
    const double hbm = double(context_plus1) * kv_bytes_;
    const double attn_ns = attention / rates_.attention_flops_per_s * 1e9;
    const double mem_ns = memory_ns(decodes > 0 ? hbm + decode_weights : hbm, hbm, double(decodes));
    const double forward_ns = std::max(gemm_ns + attn_ns, mem_ns) + comm_ns;
    const bool idle = forward_ns == 0 && inject_ns == 0 && pcie_ns == 0;
    const double overhead_ns = idle ? 0 : busy_overhead_ns;
    out = round_ns(forward_ns + inject_ns + pcie_ns + overhead_ns);
    context_plus1 += decodes;
  }
  return true;
}

SimTime CostModel::encode_cost_ns(std::uint32_t tokens, std::uint32_t context_tokens) const {
  BatchPlan plan;
  plan.encodes.push_back(FactEncode{0, 0, tokens, context_tokens, true});
  return price(work(plan)).duration_ns;
}

SimTime CostModel::load_cost_ns(std::uint64_t bytes) const {
  BatchPlan plan;
  plan.loads.push_back(FactLoad{0, 0, bytes});
  return price(work(plan)).phases.load_ns;
}

}  // namespace inferscale
