#include "executor/cost_model/calibration_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace inferscale {

const std::array<const char*, kFeatureCount>& calibration_feature_names() {
  static const std::array<const char*, kFeatureCount> names = {
      "roofline", "linear", "attention", "kv",    "inject",  "pcie", "transfers",
      "passes",   "tokens", "sequences", "mixed", "encodes", "step"};
  return names;
}

const std::array<const char*, kFeatureCount>& calibration_feature_meanings() {
  static const std::array<const char*, kFeatureCount> meanings = {
      "max((gemm_flops + attention_flops) / F, (weight_bytes + KV bytes) / B) in ns",
      "per forward pass, max(gemm_flops / F, weight_bytes / B), summed, in ns",
      "attention_flops / F in ns",
      "max(forward KV bytes read and written / B, decode_floor_ns x decode items) in ns",
      "injected KV bytes (read + write) / B in ns",
      "host <-> GPU bytes / P in ns",
      "ns per fact loaded from or offloaded to the host tier",
      "ns per forward pass (prefills and decodes: one; fact encodes: one more)",
      "ns per token through the model",
      "ns per prefill or decode item",
      "ns per step that runs prefills beside decodes",
      "ns per fact encode",
      "ns per step that does any work"};
  return meanings;
}

KneeRates KneeRates::datasheet(const GpuConfig& gpu) {
  return KneeRates{gpu.bf16_tflops * 1e12, gpu.hbm_gbps * 1e9, gpu.pcie_gbps * 1e9};
}

FeatureVector calibration_features(const StepWork& w, const ModelConfig& model,
                                   const KneeRates& knee) {
  FeatureVector f{};
  const double tokens = w.prefill_tokens + w.decode_tokens + w.encode_tokens;
  const double weights = tokens > 0 ? double(model.weight_bytes()) : 0.0;
  // StepWork's HBM bytes are the weights (read once per forward) plus the KV traffic.
  const double kv = std::max(0.0, w.hbm_bytes - weights);
  const double f_s = 1e9 / knee.gemm_flops_per_s, b_s = 1e9 / knee.hbm_bytes_per_s;
  f[kFeatureRoofline] = std::max((w.gemm_flops + w.attention_flops) * f_s, (weights + kv) * b_s);
  // Fact encodes run as a forward pass of their own, which reads the weights again.
  const double encode_gemm = w.encode_tokens * model.layer_flops_per_token();
  const bool main_pass = w.prefill_tokens + w.decode_tokens > 0, encode_pass = w.encode_tokens > 0;
  const double w_ns = double(model.weight_bytes()) * b_s;
  f[kFeatureLinear] = (main_pass ? std::max((w.gemm_flops - encode_gemm) * f_s, w_ns) : 0.0) +
                      (encode_pass ? std::max(encode_gemm * f_s, w_ns) : 0.0);
  f[kFeatureAttention] = w.attention_flops * f_s;
  f[kFeatureKv] = std::max(kv * b_s, knee.decode_floor_ns * w.decode_tokens);
  f[kFeatureInject] = w.inject_bytes * b_s;
  f[kFeaturePcie] = w.pcie_bytes * 1e9 / knee.pcie_bytes_per_s;
  f[kFeatureTransfers] = w.transfers;
  f[kFeaturePasses] = double(main_pass) + double(encode_pass);
  f[kFeatureTokens] = tokens;
  f[kFeatureSequences] = w.sequences;
  f[kFeatureMixed] = w.prefill_tokens > 0 && w.decode_tokens > 0 ? 1.0 : 0.0;
  f[kFeatureEncodes] = w.encodes;
  const bool busy =
      tokens > 0 || w.inject_bytes > 0 || w.pcie_bytes > 0 || w.transfers > 0 || w.encodes > 0;
  f[kFeatureStep] = busy ? 1.0 : 0.0;
  return f;
}

double calibrated_ns(const FeatureVector& features, const FeatureVector& coefficients) {
  double t = 0;
  for (std::size_t i = 0; i < kFeatureCount; ++i) t += features[i] * coefficients[i];
  return t;
}

Eigen::VectorXd nonnegative_least_squares(const Eigen::MatrixXd& a, const Eigen::VectorXd& b) {
  const Eigen::Index n = a.cols();
  Eigen::VectorXd scale = Eigen::VectorXd::Zero(n);
  for (Eigen::Index j = 0; j < n; ++j) {
    const double norm = a.col(j).norm();
    if (norm > 0) scale(j) = 1.0 / norm;
  }
  const Eigen::MatrixXd as = a * scale.asDiagonal();
  Eigen::VectorXd x = Eigen::VectorXd::Zero(n);
  std::vector<bool> passive(std::size_t(n), false);
  const double tol = 1e-12 * std::max(1.0, (as.transpose() * b).cwiseAbs().maxCoeff());

  // Least squares on the passive columns; the others are held at zero.
  auto solve_passive = [&]() {
    std::vector<Eigen::Index> idx;
    for (Eigen::Index j = 0; j < n; ++j) {
      if (passive[std::size_t(j)]) idx.push_back(j);
    }
    Eigen::MatrixXd ap(as.rows(), Eigen::Index(idx.size()));
    for (std::size_t i = 0; i < idx.size(); ++i) ap.col(Eigen::Index(i)) = as.col(idx[i]);
    const Eigen::VectorXd zp = ap.colPivHouseholderQr().solve(b);
    Eigen::VectorXd z = Eigen::VectorXd::Zero(n);
    for (std::size_t i = 0; i < idx.size(); ++i) z(idx[i]) = zp(Eigen::Index(i));
    return z;
  };

  for (Eigen::Index outer = 0; outer < 3 * n + 3; ++outer) {
    const Eigen::VectorXd w = as.transpose() * (b - as * x);
    Eigen::Index best = -1;
    for (Eigen::Index j = 0; j < n; ++j) {
      if (passive[std::size_t(j)] || scale(j) == 0) continue;
      if (w(j) > tol && (best < 0 || w(j) > w(best))) best = j;
    }
    if (best < 0) break;  // Kuhn-Tucker conditions hold
    passive[std::size_t(best)] = true;
    for (Eigen::Index inner = 0; inner <= n; ++inner) {
      const Eigen::VectorXd z = solve_passive();
      bool feasible = true;
      for (Eigen::Index j = 0; j < n; ++j) {
        if (passive[std::size_t(j)] && z(j) <= 0) feasible = false;
      }
      if (feasible) {
        x = z;
        break;
      }
      // Step from x towards z until the first passive coefficient reaches zero.
      double alpha = 1.0;
      for (Eigen::Index j = 0; j < n; ++j) {
        if (!passive[std::size_t(j)] || z(j) > 0) continue;
        const double d = x(j) - z(j);
        alpha = std::min(alpha, d > 0 ? x(j) / d : 0.0);
      }
      x += alpha * (z - x);
      for (Eigen::Index j = 0; j < n; ++j) {
        if (passive[std::size_t(j)] && x(j) <= 1e-15 * std::max(1.0, x.cwiseAbs().maxCoeff())) {
          passive[std::size_t(j)] = false;
          x(j) = 0;
        }
      }
    }
  }
  return x.cwiseProduct(scale);
}

double mape_pct(const std::vector<double>& measured, const std::vector<double>& predicted,
                const std::vector<bool>& mask) {
  double sum = 0;
  std::size_t n = 0;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    if (!mask.empty() && !mask[i]) continue;
    sum += std::abs(predicted[i] - measured[i]) / measured[i];
    ++n;
  }
  return n ? 100.0 * sum / double(n) : 0.0;
}

namespace {

struct Trial {
  KneeRates knee;
  FeatureVector coefficients{};
  double loss = std::numeric_limits<double>::infinity();
};

/// The NNLS fit at one knee; loss: sum of squared relative errors on the training samples.
Trial fit_at(const std::vector<FitSample>& samples, const ModelConfig& model,
             const KneeRates& knee) {
  std::vector<const FitSample*> train;
  for (const auto& s : samples) {
    if (!s.held_out) train.push_back(&s);
  }
  Eigen::MatrixXd a(Eigen::Index(train.size()), Eigen::Index(kFeatureCount));
  Eigen::VectorXd b(Eigen::Index(train.size()));
  for (std::size_t i = 0; i < train.size(); ++i) {
    const FeatureVector f = calibration_features(train[i]->work, model, knee);
    // Rows divided by the measured time: the residuals are relative errors.
    for (std::size_t j = 0; j < kFeatureCount; ++j) {
      a(Eigen::Index(i), Eigen::Index(j)) = f[j] / train[i]->duration_ns;
    }
    b(Eigen::Index(i)) = 1.0;
  }
  const Eigen::VectorXd x = nonnegative_least_squares(a, b);
  Trial t;
  t.knee = knee;
  for (std::size_t j = 0; j < kFeatureCount; ++j) t.coefficients[j] = x(Eigen::Index(j));
  t.loss = (a * x - b).squaredNorm();
  return t;
}

}  // namespace

CalibrationFit fit_calibration(const std::vector<FitSample>& samples, const ModelConfig& model,
                               const KneeRates& datasheet) {
  std::size_t train = 0;
  for (const auto& s : samples) {
    if (!(s.duration_ns > 0)) throw std::invalid_argument("calibration: a step took no time");
    if (!s.held_out) ++train;
  }
  if (train == 0) throw std::invalid_argument("calibration: no training samples");

  // At a decode floor: a coarse log grid of the GEMM rate, then a finer one around the best.
  auto search_gemm = [&](double floor_ns) {
    auto knee_at = [&](double factor) {
      KneeRates k = datasheet;
      k.gemm_flops_per_s = datasheet.gemm_flops_per_s * factor;
      k.decode_floor_ns = floor_ns;
      return k;
    };
    constexpr double kLo = 0.1, kHi = 1.5;
    constexpr int kCoarse = 48, kFine = 24;
    const double step = std::log(kHi / kLo) / (kCoarse - 1);
    Trial best;
    double best_factor = 1.0;
    for (int i = 0; i < kCoarse; ++i) {
      const double factor = kLo * std::exp(step * i);
      Trial t = fit_at(samples, model, knee_at(factor));
      if (t.loss < best.loss) {
        best = t;
        best_factor = factor;
      }
    }
    const double lo = best_factor * std::exp(-step);
    for (int i = 0; i <= kFine; ++i) {
      const double factor = lo * std::exp(2 * step * i / kFine);
      Trial t = fit_at(samples, model, knee_at(factor));
      if (t.loss < best.loss) best = t;
    }
    return best;
  };
  // A floor only where it lowers the loss (not by rounding: data without one keeps none).
  auto better = [](const Trial& t, const Trial& than) { return t.loss < than.loss * (1 - 1e-6); };
  constexpr double kFloorStep = 1000, kFloorMax = 20000, kFineFloorStep = 100;
  Trial best = search_gemm(0);
  for (double floor_ns = kFloorStep; floor_ns <= kFloorMax; floor_ns += kFloorStep) {
    Trial t = search_gemm(floor_ns);
    if (better(t, best)) best = t;
  }
  const double coarse_floor = best.knee.decode_floor_ns;
  const int fine = int(kFloorStep / kFineFloorStep);
  for (int i = 1 - fine; i < fine; ++i) {
    const double floor_ns = coarse_floor + i * kFineFloorStep;
    if (floor_ns <= 0 || i == 0) continue;
    KneeRates k = best.knee;
    k.decode_floor_ns = floor_ns;
    Trial t = fit_at(samples, model, k);
    if (better(t, best)) best = t;
  }

  CalibrationFit fit;
  fit.knee = best.knee;
  fit.coefficients = best.coefficients;
  std::vector<double> measured;
  std::vector<bool> held(samples.size()), trained(samples.size());
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const auto& s = samples[i];
    measured.push_back(s.duration_ns);
    fit.predicted_ns.push_back(
        calibrated_ns(calibration_features(s.work, model, fit.knee), fit.coefficients));
    held[i] = s.held_out;
    trained[i] = !s.held_out;
    if (s.held_out) {
      ++fit.held_out;
      fit.held_out_max_ape_pct =
          std::max(fit.held_out_max_ape_pct,
                   100.0 * std::abs(fit.predicted_ns[i] - s.duration_ns) / s.duration_ns);
    } else {
      ++fit.train;
    }
  }
  fit.train_mape_pct = mape_pct(measured, fit.predicted_ns, trained);
  fit.held_out_mape_pct = fit.held_out ? mape_pct(measured, fit.predicted_ns, held) : 0.0;
  return fit;
}

}  // namespace inferscale
