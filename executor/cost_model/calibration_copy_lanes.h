#pragma once
// @brief The copy lanes' speed measured instead of chosen: the copy_lanes grid's steps (many
// asynchronous loads and a prefill that waits for the last, alone, after decode steps that run
// while the loads move, or beside asynchronous offloads) timed on an executor, and the
// profile's async_copies.lane_speed, block_ns, stall_ns and duplex that make the calibrated
// executor price them closest.

#include <cstdint>
#include <vector>

#include "executor/cost_model/calibrated.h"
#include "executor/cost_model/calibration_grid.h"
#include "executor/cost_model/calibration_profiler.h"

namespace inferscale {

struct CopyLaneFit {
  double lane_speed = 1;
  double stall_ns = 0;         // fitted where stall_fitted, else the profile's
  bool stall_fitted = false;   // the grid has samples of several steps (loads beside decodes)
  double duplex = 1;           // fitted where duplex_fitted, else the profile's
  bool duplex_fitted = false;  // the grid has loads beside asynchronous offloads
  double block_ns = 0;         // fitted where block_fitted, else the profile's
  bool block_fitted = false;   // the lane-alone points move facts of several blocks per token
  /// The grid has points whose copies move beside a batch of prefills: stall_ns refitted on
  /// them and the lane-alone points (the duplex fitted without them).
  bool stall_beside_prefills = false;
  double mape_pct = 0;  // of the points' measured times, at the fitted fields
  double max_ape_pct = 0;
  std::vector<double> predicted_ns;  // by point, at the fitted fields
};

/// The lane_speed (0.25-4, to 0.001), where the grid's loads alone move facts of several blocks
/// per token the block_ns (0-20.5 us, to 50 ns), and where it has points whose loads move beside
/// decode steps (CalibrationPoint::async_steps) the stall_ns (0-8.25 ms, to 10 us) minimising
/// the squared relative errors of the calibrated executor's prices of each point's sample (its
/// measured steps, run in order on one executor) against `measured` (profile_executor's answer
/// for `grid`, a grid of asynchronous loads) over the points without asynchronous offloads;
/// then, with those, the duplex (0.3-1, to 0.001) minimising them over the points with
/// (CalibrationPoint::async_offloads), where there are any, but those whose copies move beside a
/// batch of prefills; then, where there are such points, the stall again (0-8.25 ms, to 10 us)
/// over them and the lane-alone points, and the duplex again with it, in rounds until neither
/// moves. Every other field of `profile` as given. Throws
/// std::invalid_argument when the grid has a point without asynchronous loads or the
/// measurements do not match it.
CopyLaneFit fit_copy_lanes(const CalibrationGrid& grid,
                           const std::vector<PointMeasurement>& measured,
                           const CalibrationProfile& profile, const ModelConfig& model,
                           const ProfileOptions& options);

}  // namespace inferscale
