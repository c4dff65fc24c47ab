#pragma once
// @brief The calibrated cost model's features and their fit: a step's time is a non-negative
// combination of roofline-shaped terms computed from its StepWork, fitted by non-negative least
// squares (Lawson-Hanson on Eigen) on relative errors, with the compute/memory knee searched
// around the datasheet.

#include <Eigen/Dense>

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "executor/cost_model/cost_model.h"
#include "executor/model_config.h"

namespace inferscale {

/// Version of the feature definitions below; a profile records it and is read only by a build
/// with the same definitions.
inline constexpr const char* kCalibrationFeatures = "roofline-v2";

/// The features, in profile order. Rates F (GEMM FLOP/s), B (HBM bytes/s) and P (PCIe bytes/s)
/// are the profile's knee; W is the model's weight bytes.
enum CalibrationFeature : std::size_t {
  kFeatureRoofline,   // max((gemm + attention flops) / F, (W + KV bytes) / B): the forward as
                      // one overlapped roofline, ns
  kFeatureLinear,     // per forward pass, max(gemm_flops / F, W / B), summed: the matmuls,
                      // compute- or weight-bound, ns (encodes run as a pass of their own)
  kFeatureAttention,  // attention_flops / F, ns
  kFeatureKv,         // max(KV bytes the forward reads and writes / B, the knee's decode
                      // floor x decode items): a decode's attention costs at least a fixed
                      // time however short its context, ns
  kFeatureInject,     // injected KV bytes (read + write) / B, ns
  kFeaturePcie,       // host <-> GPU bytes / P, ns
  kFeatureTransfers,  // facts moved between host and GPU (each a set of per-block copies)
  kFeaturePasses,     // forward passes: one for prefills and decodes, one for fact encodes
  kFeatureTokens,     // tokens through the model (prefill + decode + encode)
  kFeatureSequences,  // prefill and decode items
  kFeatureMixed,      // 1 for a step that runs prefills beside decodes
  kFeatureEncodes,    // fact encodes
  kFeatureStep,       // 1 for a step that does any work
  kFeatureCount
};

using FeatureVector = std::array<double, kFeatureCount>;

/// Feature names as the profile spells them ("linear", "attention", ...).
const std::array<const char*, kFeatureCount>& calibration_feature_names();
/// What each coefficient multiplies, in words (profile comments and docs).
const std::array<const char*, kFeatureCount>& calibration_feature_meanings();

/// The rates features are measured in.
struct KneeRates {
  double gemm_flops_per_s = 0;
  double hbm_bytes_per_s = 0;
  double pcie_bytes_per_s = 0;
  /// The kv feature's floor per decode item, ns (0: none, as in profiles written before it).
  double decode_floor_ns = 0;
  /// Datasheet peaks (no efficiency factors), no decode floor.
  static KneeRates datasheet(const GpuConfig& gpu);
};

/// A step's features.
FeatureVector calibration_features(const StepWork& w, const ModelConfig& model,
                                   const KneeRates& knee);
/// Sum of coefficient x feature, ns.
double calibrated_ns(const FeatureVector& features, const FeatureVector& coefficients);

/// Non-negative least squares: argmin |A x - b| subject to x >= 0 (Lawson-Hanson active set;
/// columns are scaled to unit norm first; an all-zero column gets 0).
Eigen::VectorXd nonnegative_least_squares(const Eigen::MatrixXd& a, const Eigen::VectorXd& b);

/// One measured step (a grid point): its work and its time.
struct FitSample {
  StepWork work;
  double duration_ns = 0;
  bool held_out = false;
};

struct CalibrationFit {
  KneeRates knee;
  FeatureVector coefficients{};
  std::size_t train = 0, held_out = 0;
  double train_mape_pct = 0;
  double held_out_mape_pct = 0;
  double held_out_max_ape_pct = 0;   // worst held-out point
  std::vector<double> predicted_ns;  // per sample
};

/// Fits the coefficients on the samples not held out, minimizing squared relative error; the
/// GEMM rate of the knee is searched over 0.1-1.5x the datasheet (HBM and PCIe stay at the
/// datasheet; only the compute/memory ratio moves the knee) at each decode floor of 0-20 us (in
/// 1 us steps, then 0.1 us around the best; a floor is taken only where it lowers the loss).
/// Reports MAPE on both sets.
/// Throws std::invalid_argument with no training sample or a non-positive duration.
CalibrationFit fit_calibration(const std::vector<FitSample>& samples, const ModelConfig& model,
                               const KneeRates& datasheet);

/// Mean absolute percentage error of `predicted` against `measured` over `mask` (all if empty).
double mape_pct(const std::vector<double>& measured, const std::vector<double>& predicted,
                const std::vector<bool>& mask = {});

}  // namespace inferscale
