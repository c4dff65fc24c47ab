#pragma once
// @brief The calibrated cost model: a profile's fitted coefficients (measured on one GPU with
// one model) price a step from its roofline-shaped features; the executor that uses it.
// Plain data here; the profile's YAML lives in sim/config/profile.h.

#include <cstdint>
#include <string>

#include "executor/cost_model/calibration_fit.h"
#include "executor/cost_model/copy_engine.h"
#include "executor/cost_model/cost_model.h"
#include "executor/executor.h"
#include "executor/model_config.h"
#include "executor/row_padding.h"

namespace inferscale {

/// A calibration profile: what was measured, where, and the fitted model.
struct CalibrationProfile {
  std::string features = kCalibrationFeatures;  // feature definitions version
  /// The model's name and shape (a profile prices only this model).
  struct Model {
    std::string name;
    std::uint32_t layers = 0, hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0, vocab = 0,
                  dtype_bytes = 2;
  } model;
  std::string gpu;       // GPU preset name
  std::string executor;  // what was profiled: gpu | cost_model
  std::string machine;   // the device's name as the executor reports it
  std::string date;      // UTC, ISO 8601
  std::string command;   // the command that produced the profile
  KneeRates knee;
  FeatureVector coefficients{};
  struct Grid {
    std::string name;
    std::string description;
    std::string split = "every 5th point (index % 5 == 4) held out of the fit";
    std::uint32_t points = 0, train = 0, held_out = 0, warmup = 0, repeats = 0;
  } grid;
  double train_mape_pct = 0;
  double held_out_mape_pct = 0;
  double held_out_max_ape_pct = 0;
  /// Asynchronous host-tier copies (store.host.async_loads): what the grid's steps do not
  /// measure, fitted to the copy_lanes grid (`calibrate --copy-lanes`). The lanes' rate alone is
  /// the fit's (pcie and transfers coefficients). Defaults: the lanes at their rate alone, no
  /// block, issue or stall time.
  struct AsyncCopies {
    bool present = false;   // read from the profile (else the defaults)
    double duplex = 1;      // each lane's rate while both lanes move, a fraction of its rate alone
    double lane_speed = 1;  // a lane's rate alone, a multiple of a load's inside a step
    double block_ns = 0;    // a lane's time per 16-token block copied, besides its bytes
    double issue_ns = 0;    // host time a step spends issuing one asynchronous copy
    double stall_ns = 0;    // added to a step whose forward pass starts while copies are in flight
    std::uint32_t batch_facts = 16;  // facts per copy batch (the GPU executor's tickets)
    std::string source;              // what they were fitted from
  } async_copies;

  /// The model's shape as recorded in a profile.
  static Model model_of(const ModelConfig& m);
};

/// Empty when the profile was measured on this model; else both names and shapes, in words.
std::string profile_model_mismatch(const CalibrationProfile& profile, const ModelConfig& model);

/// @brief Prices steps with a profile's coefficients. With a RowPadding, a step's forward pass
/// (and its pass of fact encodes) is priced with the rows the GPU executor pads it with: the
/// profile's grid is measured without padding, so those rows are priced as rows.
class CalibratedCostModel {
 public:
  CalibratedCostModel(ModelConfig model, CalibrationProfile profile, RowPadding padding = {});
  /// Step time in ns with its phase split.
  BatchResult price(const BatchPlan& plan) const;
  BatchResult price(const StepWork& w) const;
  /// Executor::price_decodes of the calibrated executor.
  bool price_decodes(std::uint32_t decodes, std::uint64_t context_tokens,
                     std::span<SimTime> durations_ns) const {
    for (std::size_t j = 0; j < durations_ns.size(); ++j) {
      StepWork w;
      if (!counter_.decode_work(decodes, context_tokens + j * decodes + decodes, w)) return false;
      durations_ns[j] = price(w).duration_ns;
    }
    return true;
  }
  /// Time to encode one fact alone (its recompute cost for cost-aware policies).
  SimTime encode_cost_ns(std::uint32_t tokens, std::uint32_t context_tokens) const;
  /// Time to copy one fact of `bytes` from the host tier (the load phase of a step that does
  /// only that).
  SimTime load_cost_ns(std::uint64_t bytes) const;
  /// The asynchronous copy lanes as the profile describes them.
  CopyEngineParams copy_engine_params() const;
  const CalibrationProfile& profile() const { return profile_; }
  /// Stored fact KV's bytes per token (CostModel::set_fact_kv_bytes).
  void set_fact_kv_bytes(double bytes_per_token) { counter_.set_fact_kv_bytes(bytes_per_token); }
  /// `w` with the padding rows' work added (matrix products, one key each, their KV written),
  /// counted as rows of the pass they pad: prefill (or decode, in a step without prefills) and
  /// encode tokens. Encodes are counted as one pass.
  StepWork padded(StepWork w) const;

 private:
  CostModel counter_;  // counts a plan's work (its rates are unused)
  CalibrationProfile profile_;
  RowPadding padding_;
};

/// @brief The calibrated executor: prices each plan with a profile; performs nothing. A step
/// with asynchronous copies also pays the host time to issue them, and its prefills wait for the
/// loads they inject on the modelled copy lanes (CopyEngineModel), as the GPU executor's do.
class CalibratedExecutor final : public Executor {
 public:
  /// copies_beside_pass: price a step whose pass needs none of its asynchronous copies as the
  /// GPU executor runs it by default (the pass first, the copies issued beside it); false: the
  /// copies first, as that executor did before 0337801 (GpuExecutorOptions::copies_beside_pass).
  explicit CalibratedExecutor(CalibratedCostModel model, bool copies_beside_pass = true)
      : model_(std::move(model)),
        copies_(model_.copy_engine_params()),
        copies_beside_pass_(copies_beside_pass) {}
  BatchResult execute(const BatchPlan& plan) override;
  std::string name() const override { return "calibrated"; }
  bool price_decodes(std::uint32_t decodes, std::uint64_t context_tokens,
                     std::span<SimTime> durations_ns) const override {
    return model_.price_decodes(decodes, context_tokens, durations_ns);
  }
  const CalibratedCostModel& cost_model() const { return model_; }
  const CopyEngineModel& copies() const { return copies_; }

 private:
  CalibratedCostModel model_;
  CopyEngineModel copies_;
  bool copies_beside_pass_;
};

}  // namespace inferscale
