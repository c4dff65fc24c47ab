#include "executor/cost_model/calibrated.h"

#include <algorithm>
#include <cmath>

#include "executor/copy_order.h"

namespace inferscale {

namespace {

std::string shape_text(const CalibrationProfile::Model& m) {
  return "'" + m.name + "' (" + std::to_string(m.layers) + " layers, hidden " +
         std::to_string(m.hidden) + ", heads " + std::to_string(m.heads) + "/" +
         std::to_string(m.kv_heads) + ", head_dim " + std::to_string(m.head_dim) + ", ffn " +
         std::to_string(m.ffn) + ", vocab " + std::to_string(m.vocab) + ", " +
         std::to_string(m.dtype_bytes) + "-byte weights)";
}

/// Rounded to ns; saturates at +-2^60 ns as the roofline's prices do (NaN: 0).
SimTime round_ns(double ns) {
  constexpr SimTime kMax = SimTime{1} << 60;
  if (std::isnan(ns)) return 0;
  if (ns >= 0x1p60) return kMax;
  if (ns <= -0x1p60) return -kMax;
  return static_cast<SimTime>(std::llround(ns));
}

}  // namespace

CalibrationProfile::Model CalibrationProfile::model_of(const ModelConfig& m) {
  return Model{m.name,     m.layers, m.hidden, m.heads,      m.kv_heads,
               m.head_dim, m.ffn,    m.vocab,  m.dtype_bytes};
}

std::string profile_model_mismatch(const CalibrationProfile& profile, const ModelConfig& model) {
  const auto run = CalibrationProfile::model_of(model);
  const auto& p = profile.model;
  const bool same = p.name == run.name && p.layers == run.layers && p.hidden == run.hidden &&
                    p.heads == run.heads && p.kv_heads == run.kv_heads &&
                    p.head_dim == run.head_dim && p.ffn == run.ffn && p.vocab == run.vocab &&
                    p.dtype_bytes == run.dtype_bytes;
  if (same) return "";
  return "the profile was calibrated for model " + shape_text(p) + ", the run's model is " +
         shape_text(run);
}

CalibratedCostModel::CalibratedCostModel(ModelConfig model, CalibrationProfile profile,
                                         RowPadding padding)
    : counter_(std::move(model), CostRates{}), profile_(std::move(profile)), padding_(padding) {}

StepWork CalibratedCostModel::padded(StepWork w) const {
  if (padding_.above == 0) return w;
  const auto main = double(padding_.rows(std::uint64_t(w.prefill_tokens + w.decode_tokens)));
  const auto encode = double(padding_.rows(std::uint64_t(w.encode_tokens)));
  const double rows = main + encode;
  if (rows == 0) return w;
  const ModelConfig& m = counter_.model();
  w.gemm_flops += rows * m.layer_flops_per_token();
  w.attention_flops += rows * m.attention_flops(1, 0);
  w.hbm_bytes += rows * double(m.kv_bytes_per_token());
  (w.prefill_tokens > 0 ? w.prefill_tokens : w.decode_tokens) += main;
  w.encode_tokens += encode;
  return w;
}

BatchResult CalibratedCostModel::price(const BatchPlan& plan) const {
  return price(counter_.work(plan));
}

BatchResult CalibratedCostModel::price(const StepWork& work) const {
  const StepWork w = padded(work);
  const FeatureVector f = calibration_features(w, counter_.model(), profile_.knee);
  const FeatureVector& c = profile_.coefficients;
  auto term = [&](CalibrationFeature i) { return f[i] * c[i]; };
  const double forward_ns = term(kFeatureRoofline) + term(kFeatureLinear) +
                            term(kFeatureAttention) + term(kFeatureKv) + term(kFeatureTokens);
  const double inject_ns = term(kFeatureInject);
  const double load_ns = term(kFeaturePcie) + term(kFeatureTransfers);
  const double overhead_ns = term(kFeaturePasses) + term(kFeatureSequences) + term(kFeatureMixed) +
                             term(kFeatureEncodes) + term(kFeatureStep);
  // The forward pass is split over its phases by token count, as in the roofline cost model.
  const double tokens = w.prefill_tokens + w.decode_tokens + w.encode_tokens;
  auto share = [&](double t) { return tokens > 0 ? forward_ns * t / tokens : 0.0; };
  BatchResult r;
  r.phases.prefill_ns = round_ns(share(w.prefill_tokens));
  r.phases.decode_ns = round_ns(share(w.decode_tokens));
  r.phases.encode_ns = round_ns(share(w.encode_tokens));
  r.phases.inject_ns = round_ns(inject_ns);
  r.phases.load_ns = round_ns(load_ns);
  r.phases.overhead_ns = round_ns(overhead_ns);
  r.duration_ns = round_ns(forward_ns + inject_ns + load_ns + overhead_ns);
  return r;
}

SimTime CalibratedCostModel::encode_cost_ns(std::uint32_t tokens,
                                            std::uint32_t context_tokens) const {
  BatchPlan plan;
  plan.encodes.push_back(FactEncode{0, 0, tokens, context_tokens, true});
  return price(plan).duration_ns;
}

SimTime CalibratedCostModel::load_cost_ns(std::uint64_t bytes) const {
  BatchPlan plan;
  plan.loads.push_back(FactLoad{0, 0, bytes});
  return price(plan).phases.load_ns;
}

CopyEngineParams CalibratedCostModel::copy_engine_params() const {
  const FeatureVector& c = profile_.coefficients;
  CopyEngineParams p;
  // A load inside a step costs pcie x bytes / P + transfers; a lane alone runs lane_speed
  // times as fast.
  const double pcie = c[kFeaturePcie] > 0 ? c[kFeaturePcie] : 1.0;
  const double speed = profile_.async_copies.lane_speed;
  p.bytes_per_ns = profile_.knee.pcie_bytes_per_s * 1e-9 / pcie * speed;
  p.fact_ns = c[kFeatureTransfers] / speed;
  p.block_ns = profile_.async_copies.block_ns;
  p.duplex = profile_.async_copies.duplex;
  p.issue_ns = profile_.async_copies.issue_ns;
  p.stall_ns = profile_.async_copies.stall_ns;
  p.batch_facts = profile_.async_copies.batch_facts;
  return p;
}

BatchResult CalibratedExecutor::execute(const BatchPlan& plan) {
  BatchResult r = model_.price(plan);
  if (plan.async_loads.empty() && plan.async_offloads.empty() && copies_.pending_loads() == 0 &&
      !copies_.busy_at(plan.now)) {
    return r;
  }
  SimTime ready;
  const bool after_forward = copies_beside_pass_ && copies_follow_forward(plan);
  if (after_forward) {
    // Nothing of the pass needs this step's copies: the GPU executor launches the pass once the
    // earlier loads its first chunks inject are done, then issues the copies while the device
    // runs it (they reach their lanes from then on); the step ends when both are through.
    ready = copies_.ready(plan, plan.now);
    const SimTime issue_ns = copies_.issue(plan, ready);
    r.phases.load_ns += ready - plan.now;
    const SimTime overrun = std::max<SimTime>(0, issue_ns - r.duration_ns);
    r.phases.overhead_ns += overrun;
    r.duration_ns += (ready - plan.now) + overrun;
  } else {
    // The GPU executor issues the copies first (the compute stream idles meanwhile), then makes
    // the forward pass wait for the loads its first chunks inject: both count as the load phase.
    const SimTime issue_ns = copies_.issue(plan, plan.now);
    const SimTime start = plan.now + issue_ns;
    ready = copies_.ready(plan, start);
    const SimTime extra = issue_ns + (ready - start);
    r.phases.load_ns += extra;
    r.duration_ns += extra;
  }
  // A step whose forward pass runs while copies move (its own, issued after its launch, or
  // earlier ones still moving when it starts) pays a fixed stall (measured; see
  // executor/cost_model/README.md).
  const bool computes = !plan.prefills.empty() || !plan.decodes.empty() || !plan.encodes.empty();
  if (computes && copies_.params().stall_ns > 0 && (after_forward || copies_.busy_at(ready))) {
    const auto stall = static_cast<SimTime>(std::llround(copies_.params().stall_ns));
    r.phases.overhead_ns += stall;
    r.duration_ns += stall;
  }
  return r;
}

}  // namespace inferscale
