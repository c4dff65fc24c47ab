#include "executor/cost_model/calibration_profiler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace inferscale {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void accumulate(StepWork& sum, const StepWork& w, double scale) {
  sum.gemm_flops += scale * w.gemm_flops;
  sum.attention_flops += scale * w.attention_flops;
  sum.hbm_bytes += scale * w.hbm_bytes;
  sum.inject_bytes += scale * w.inject_bytes;
  sum.pcie_bytes += scale * w.pcie_bytes;
  sum.sequences += scale * w.sequences;
  sum.encodes += scale * w.encodes;
  sum.prefill_tokens += scale * w.prefill_tokens;
  sum.decode_tokens += scale * w.decode_tokens;
  sum.encode_tokens += scale * w.encode_tokens;
}

}  // namespace

std::vector<PointMeasurement> profile_executor(Executor& executor, const CalibrationGrid& grid,
                                               const ModelConfig& model,
                                               const ProfileOptions& options,
                                               const std::function<void(const std::string&)>& log) {
  if (options.repeats == 0) throw std::invalid_argument("calibration: repeats must be positive");
  const CostModel counter(model, CostRates{});  // counts work; its rates are unused
  CalibrationPlanner planner(model, grid.shape);
  for (const CalibrationStep& s : planner.preamble()) executor.execute(s.plan);

  std::vector<PointMeasurement> out;
  const std::uint32_t timed = options.warmup + options.repeats;
  for (std::size_t i = 0; i < grid.points.size(); ++i) {
    const CalibrationPoint& pt = grid.points[i];
    PointMeasurement m;
    m.point = i;
    m.held_out = calibration_held_out(i);
    std::uint32_t seen = 0;
    for (const CalibrationStep& s : planner.steps(pt, timed)) {
      const BatchResult r = executor.execute(s.plan);
      if (!s.measured || seen++ < options.warmup) continue;
      m.samples_ns.push_back(double(r.duration_ns));
      accumulate(m.work, counter.work(s.plan), 1.0 / options.repeats);
    }
    m.duration_ns = median(m.samples_ns);
    if (log) {
      char line[256];
      std::snprintf(line, sizeof line, "[%3zu/%zu] %-52s %10.3f ms%s", i + 1, grid.points.size(),
                    pt.label(grid.shape).c_str(), m.duration_ns / 1e6,
                    m.held_out ? "  (held out)" : "");
      log(line);
    }
    out.push_back(std::move(m));
  }
  for (const CalibrationStep& s : planner.postamble()) executor.execute(s.plan);
  return out;
}

std::vector<FitSample> fit_samples(const std::vector<PointMeasurement>& measurements) {
  std::vector<FitSample> out;
  out.reserve(measurements.size());
  for (const auto& m : measurements) out.push_back(FitSample{m.work, m.duration_ns, m.held_out});
  return out;
}

std::string calibration_points_csv(const CalibrationGrid& grid,
                                   const std::vector<PointMeasurement>& measurements,
                                   const CalibrationFit& fit, const ModelConfig& model) {
  std::string out = "point,label,split,measured_ns,predicted_ns,error_pct";
  for (const char* name : calibration_feature_names()) out += std::string(",") + name;
  // The step's work as counted (a refit with other features needs no new measurement).
  out +=
      ",gemm_flops,attention_flops,hbm_bytes,inject_bytes,pcie_bytes,sequences,encodes,"
      "prefill_tokens,decode_tokens,encode_tokens,samples_ns\n";
  for (std::size_t i = 0; i < measurements.size(); ++i) {
    const PointMeasurement& m = measurements[i];
    const FeatureVector f = calibration_features(m.work, model, fit.knee);
    const double predicted = calibrated_ns(f, fit.coefficients);
    char buf[160];
    std::snprintf(buf, sizeof buf, "%zu,\"%s\",%s,%.0f,%.0f,%.3f", m.point,
                  grid.points[m.point].label(grid.shape).c_str(), m.held_out ? "held_out" : "train",
                  m.duration_ns, predicted, 100.0 * (predicted - m.duration_ns) / m.duration_ns);
    out += buf;
    for (double v : f) {
      std::snprintf(buf, sizeof buf, ",%.6g", v);
      out += buf;
    }
    const StepWork& w = m.work;
    for (double v : {w.gemm_flops, w.attention_flops, w.hbm_bytes, w.inject_bytes, w.pcie_bytes,
                     w.sequences, w.encodes, w.prefill_tokens, w.decode_tokens, w.encode_tokens}) {
      std::snprintf(buf, sizeof buf, ",%.17g", v);
      out += buf;
    }
    std::string samples;
    for (double v : m.samples_ns) {
      std::snprintf(buf, sizeof buf, "%s%.0f", samples.empty() ? "" : " ", v);
      samples += buf;
    }
    out += "," + samples + "\n";
  }
  return out;
}

}  // namespace inferscale
