#pragma once
// @brief Profiles an executor over a calibration grid: each point's steps run in order, the
// timed ones after the warm-up are kept, and a point's time is their median.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "executor/cost_model/calibration_fit.h"
#include "executor/cost_model/calibration_grid.h"
#include "executor/executor.h"

namespace inferscale {

struct ProfileOptions {
  std::uint32_t warmup = 2;   // timed steps of each point discarded first
  std::uint32_t repeats = 5;  // timed steps kept (median)
  /// The start of a grid is the least steady part of a profile (clocks, the host's first
  /// page-locked memory, kernels loaded on first use): after the last point, the first points
  /// are measured again, in order, until `settled` in a row agree with their first median
  /// within `tolerance`, at most `recheck` of them. A point that moved keeps its later median.
  std::uint32_t recheck = 32;
  std::uint32_t settled = 4;
  double tolerance = 0.05;
  /// The copy order of the executor measured (GpuExecutorOptions::copies_beside_pass): the
  /// copy lanes are fitted with the calibrated model pricing that order.
  bool copies_beside_pass = true;
};

/// One grid point measured.
struct PointMeasurement {
  std::size_t point = 0;   // index in the grid
  StepWork work;           // mean over the kept steps (decode contexts grow by one a step)
  double duration_ns = 0;  // median of the kept steps
  std::vector<double> samples_ns;
  bool held_out = false;
  double first_ns = 0;  // measured again (ProfileOptions::recheck): its first median; 0 if kept
};

/// Runs the grid on `executor` (preamble, every point, postamble). `log` gets one line per point.
std::vector<PointMeasurement> profile_executor(Executor& executor, const CalibrationGrid& grid,
                                               const ModelConfig& model,
                                               const ProfileOptions& options,
                                               const std::function<void(const std::string&)>& log);

/// The measurements of an earlier profile (a points CSV's timed samples, one list per grid point,
/// in grid order) with each point's work counted again from the grid's plans, as profile_executor
/// counts it: a refit with other feature definitions needs no new measurement. Throws
/// std::invalid_argument when the lists do not match the grid (count) or the options (samples).
std::vector<PointMeasurement> replay_measurements(
    const CalibrationGrid& grid, const ModelConfig& model, const ProfileOptions& options,
    const std::vector<std::vector<double>>& samples_ns);

/// The measurements as fit samples (work, median time, held-out flag).
std::vector<FitSample> fit_samples(const std::vector<PointMeasurement>& measurements);

/// One CSV row per point: index, label, split, measured and predicted ns, error, features, the
/// step's work as counted, and the timed samples (space separated).
std::string calibration_points_csv(const CalibrationGrid& grid,
                                   const std::vector<PointMeasurement>& measurements,
                                   const CalibrationFit& fit, const ModelConfig& model);

}  // namespace inferscale
