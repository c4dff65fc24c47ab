#include "executor/cost_model/calibration_copy_lanes.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace inferscale {

CopyLaneFit fit_copy_lanes(const CalibrationGrid& grid,
                           const std::vector<PointMeasurement>& measured,
                           const CalibrationProfile& profile, const ModelConfig& model,
                           const ProfileOptions& options) {
  if (measured.size() != grid.points.size() || measured.empty()) {
    throw std::invalid_argument("copy lanes: " + std::to_string(measured.size()) +
                                " measurements for a grid of " +
                                std::to_string(grid.points.size()) + " points");
  }
  // Each point's measured step (its first: the timed ones are alike), as profile_executor ran it.
  CalibrationPlanner planner(model, grid.shape);
  planner.preamble();
  std::vector<BatchPlan> plans;
  for (const CalibrationPoint& pt : grid.points) {
    if (pt.async_loads == 0) {
      throw std::invalid_argument("copy lanes: point '" + pt.label(grid.shape) +
                                  "' has no asynchronous loads");
    }
    for (CalibrationStep& s : planner.steps(pt, options.warmup + options.repeats)) {
      if (s.measured) {
        plans.push_back(std::move(s.plan));
        break;
      }
    }
  }
  // A fresh executor per step: the lanes idle when it starts, as after the grid's clean-up.
  auto predict = [&](double speed) {
    CalibrationProfile p = profile;
    p.async_copies.lane_speed = speed;
    std::vector<double> out;
    for (const BatchPlan& plan : plans) {
      CalibratedExecutor executor(CalibratedCostModel(model, p));
      out.push_back(double(executor.execute(plan).duration_ns));
    }
    return out;
  };
  CopyLaneFit best;
  double best_loss = INFINITY;
  for (int milli = 250; milli <= 4000; ++milli) {
    const double speed = milli / 1000.0;
    const std::vector<double> pred = predict(speed);
    double loss = 0;
    for (std::size_t i = 0; i < pred.size(); ++i) {
      const double e = pred[i] / measured[i].duration_ns - 1;
      loss += e * e;
    }
    if (loss < best_loss) {
      best_loss = loss;
      best.lane_speed = speed;
      best.predicted_ns = pred;
    }
  }
  for (std::size_t i = 0; i < best.predicted_ns.size(); ++i) {
    const double ape = 100 * std::abs(best.predicted_ns[i] / measured[i].duration_ns - 1);
    best.mape_pct += ape / double(best.predicted_ns.size());
    best.max_ape_pct = std::max(best.max_ape_pct, ape);
  }
  return best;
}

}  // namespace inferscale
