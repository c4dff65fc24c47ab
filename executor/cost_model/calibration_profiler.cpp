#include "executor/cost_model/calibration_profiler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

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
  sum.transfers += scale * w.transfers;
  sum.prefill_tokens += scale * w.prefill_tokens;
  sum.decode_tokens += scale * w.decode_tokens;
  sum.encode_tokens += scale * w.encode_tokens;
}

/// Walks the grid's steps in order; `time_step` runs a step and returns its time in ns (or is
/// empty: nothing runs, and the points keep the samples they were given). Each point's work is
/// the mean over its kept steps.
std::vector<PointMeasurement> walk_grid(const CalibrationGrid& grid, const ModelConfig& model,
                                        const ProfileOptions& options,
                                        const std::function<double(const BatchPlan&)>& time_step,
                                        const std::function<void(const std::string&)>& log) {
  if (options.repeats == 0) throw std::invalid_argument("calibration: repeats must be positive");
  const CostModel counter(model, CostRates{});  // counts work; its rates are unused
  CalibrationPlanner planner(model, grid.shape);
  if (time_step) {
    for (const CalibrationStep& s : planner.preamble()) time_step(s.plan);
  }
  const std::uint32_t timed = options.warmup + options.repeats;
  auto measure = [&](std::size_t i) {
    const CalibrationPoint& pt = grid.points[i];
    PointMeasurement m;
    m.point = i;
    m.held_out = calibration_held_out(i);
    std::uint32_t seen = 0;
    double sample_ns = 0;  // a sample's steps so far (CalibrationStep::continues)
    StepWork sample_work;
    for (const CalibrationStep& s : planner.steps(pt, timed)) {
      const double ns = time_step ? time_step(s.plan) : 0.0;
      if (!s.measured) continue;
      sample_ns += ns;
      accumulate(sample_work, counter.work(s.plan), 1.0);
      if (s.continues) continue;
      if (seen++ >= options.warmup) {
        if (time_step) m.samples_ns.push_back(sample_ns);
        accumulate(m.work, sample_work, 1.0 / options.repeats);
      }
      sample_ns = 0;
      sample_work = StepWork{};
    }
    if (time_step) m.duration_ns = median(m.samples_ns);
    return m;
  };
  auto line = [&](std::size_t i, const PointMeasurement& m) {
    char text[256];
    std::snprintf(text, sizeof text, "[%3zu/%zu] %-52s %10.3f ms%s", i + 1, grid.points.size(),
                  grid.points[i].label(grid.shape).c_str(), m.duration_ns / 1e6,
                  m.held_out ? "  (held out)" : "");
    return std::string(text);
  };
  std::vector<PointMeasurement> out;
  for (std::size_t i = 0; i < grid.points.size(); ++i) {
    out.push_back(measure(i));
    if (log) log(line(i, out.back()));
  }
  if (time_step && options.recheck > 0) {
    const std::size_t last = std::min<std::size_t>(options.recheck, out.size());
    std::uint32_t agreed = 0;
    for (std::size_t i = 0; i < last && agreed < options.settled; ++i) {
      PointMeasurement again = measure(i);
      const double first = out[i].duration_ns;
      if (std::abs(again.duration_ns - first) <= options.tolerance * first) {
        ++agreed;
        continue;
      }
      agreed = 0;
      again.first_ns = first;
      if (log) {
        char was[64];
        std::snprintf(was, sizeof was, "  (measured again: %.3f ms at first)", first / 1e6);
        log(line(i, again) + was);
      }
      out[i] = std::move(again);
    }
  }
  if (time_step) {
    for (const CalibrationStep& s : planner.postamble()) time_step(s.plan);
  }
  return out;
}

}  // namespace

std::vector<PointMeasurement> profile_executor(Executor& executor, const CalibrationGrid& grid,
                                               const ModelConfig& model,
                                               const ProfileOptions& options,
                                               const std::function<void(const std::string&)>& log) {
  return walk_grid(
      grid, model, options,
      [&](const BatchPlan& plan) { return double(executor.execute(plan).duration_ns); }, log);
}

std::vector<PointMeasurement> replay_measurements(
    const CalibrationGrid& grid, const ModelConfig& model, const ProfileOptions& options,
    const std::vector<std::vector<double>>& samples_ns) {
  if (samples_ns.size() != grid.points.size()) {
    throw std::invalid_argument("calibration: " + std::to_string(samples_ns.size()) +
                                " measured points for a grid of " +
                                std::to_string(grid.points.size()));
  }
  std::vector<PointMeasurement> out = walk_grid(grid, model, options, {}, {});
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (samples_ns[i].size() != options.repeats) {
      throw std::invalid_argument("calibration: point " + std::to_string(i) + " has " +
                                  std::to_string(samples_ns[i].size()) + " samples, expected " +
                                  std::to_string(options.repeats) + " (--repeats)");
    }
    for (double v : samples_ns[i]) {
      if (!(v > 0)) {
        throw std::invalid_argument("calibration: point " + std::to_string(i) +
                                    " has a sample that is not a positive time");
      }
    }
    out[i].samples_ns = samples_ns[i];
    out[i].duration_ns = median(samples_ns[i]);
  }
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
      "prefill_tokens,decode_tokens,encode_tokens,transfers,samples_ns\n";
  for (std::size_t i = 0; i < measurements.size(); ++i) {
    const PointMeasurement& m = measurements[i];
    const FeatureVector f = calibration_features(m.work, model, fit.knee);
    const double predicted = calibrated_ns(f, fit.coefficients);
    char buf[160];
    out += std::to_string(m.point) + ",\"" + grid.points[m.point].label(grid.shape) + "\",";
    std::snprintf(buf, sizeof buf, "%s,%.0f,%.0f,%.3f", m.held_out ? "held_out" : "train",
                  m.duration_ns, predicted, 100.0 * (predicted - m.duration_ns) / m.duration_ns);
    out += buf;
    for (double v : f) {
      std::snprintf(buf, sizeof buf, ",%.6g", v);
      out += buf;
    }
    const StepWork& w = m.work;
    for (double v :
         {w.gemm_flops, w.attention_flops, w.hbm_bytes, w.inject_bytes, w.pcie_bytes, w.sequences,
          w.encodes, w.prefill_tokens, w.decode_tokens, w.encode_tokens, w.transfers}) {
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
