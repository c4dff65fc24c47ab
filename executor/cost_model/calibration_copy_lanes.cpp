#include "executor/cost_model/calibration_copy_lanes.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace inferscale {

namespace {

/// Each point's first sample as profile_executor ran it: its measured steps up to the first
/// that does not continue (the timed ones are alike).
std::vector<std::vector<BatchPlan>> first_samples(const CalibrationGrid& grid,
                                                  const ModelConfig& model,
                                                  const ProfileOptions& options) {
  CalibrationPlanner planner(model, grid.shape);
  planner.preamble();
  std::vector<std::vector<BatchPlan>> out;
  for (const CalibrationPoint& pt : grid.points) {
    if (pt.async_loads == 0) {
      throw std::invalid_argument("copy lanes: point '" + pt.label(grid.shape) +
                                  "' has no asynchronous loads");
    }
    std::vector<BatchPlan> sample;
    for (CalibrationStep& s : planner.steps(pt, options.warmup + options.repeats)) {
      if (!s.measured) continue;
      sample.push_back(std::move(s.plan));
      if (!s.continues) break;
    }
    out.push_back(std::move(sample));
  }
  return out;
}

}  // namespace

CopyLaneFit fit_copy_lanes(const CalibrationGrid& grid,
                           const std::vector<PointMeasurement>& measured,
                           const CalibrationProfile& profile, const ModelConfig& model,
                           const ProfileOptions& options) {
  if (measured.size() != grid.points.size() || measured.empty()) {
    throw std::invalid_argument("copy lanes: " + std::to_string(measured.size()) +
                                " measurements for a grid of " +
                                std::to_string(grid.points.size()) + " points");
  }
  const std::vector<std::vector<BatchPlan>> samples = first_samples(grid, model, options);
  // A fresh executor per sample: the lanes idle when it starts, as after the grid's clean-up.
  // Only the samples `wanted` are priced (the others NaN): a search prices the points it fits.
  auto predict = [&](double speed, double stall_ns, double duplex, double block_ns,
                     const std::vector<bool>& wanted) {
    CalibrationProfile p = profile;
    p.async_copies.lane_speed = speed;
    p.async_copies.stall_ns = stall_ns;
    p.async_copies.duplex = duplex;
    p.async_copies.block_ns = block_ns;
    const CalibratedCostModel cost(model, p);
    std::vector<double> out(samples.size(), NAN);
    for (std::size_t i = 0; i < samples.size(); ++i) {
      if (!wanted[i]) continue;
      CalibratedExecutor executor(cost, options.copies_beside_pass);
      SimTime now = 0;  // the steps run back to back: the lanes move while each runs
      for (BatchPlan plan : samples[i]) {
        plan.now = now;
        now += executor.execute(plan).duration_ns;
      }
      out[i] = double(now);
    }
    return out;
  };
  // stall_ns acts only on a step whose forward pass starts while copies move: the samples of
  // several steps. Without them it keeps the profile's value.
  const bool stalls = std::any_of(samples.begin(), samples.end(),
                                  [](const std::vector<BatchPlan>& s) { return s.size() > 1; });
  // The points whose loads move beside asynchronous offloads measure the duplex; the others
  // the lane alone (and the stall). Points whose copies move beside a batch of prefills (a
  // compute-bound pass longer than the copies) show what the copies cost the pass: the stall,
  // refitted on them; they stay out of the duplex's fit (the pass, not the lanes, sets them).
  std::vector<bool> both_lanes(samples.size()), beside_prefills(samples.size());
  for (std::size_t i = 0; i < samples.size(); ++i) {
    both_lanes[i] = std::any_of(samples[i].begin(), samples[i].end(),
                                [](const BatchPlan& p) { return !p.async_offloads.empty(); });
    beside_prefills[i] = std::any_of(samples[i].begin(), samples[i].end(), [](const BatchPlan& p) {
      return p.prefills.size() > 1 && !p.async_loads.empty();
    });
  }
  // block_ns apart from the bytes: the lane-alone points move facts of several blocks per token
  // (e.g. 13, 17 and 24 tokens: 1, 2 and 2 blocks).
  std::vector<double> blocks_per_token;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (both_lanes[i]) continue;
    for (const BatchPlan& plan : samples[i]) {
      for (const FactLoad& l : plan.async_loads) {
        const double r = double(blocks_of(l.tokens)) / double(l.tokens);
        if (std::none_of(blocks_per_token.begin(), blocks_per_token.end(),
                         [r](double x) { return std::abs(x - r) < 1e-9; })) {
          blocks_per_token.push_back(r);
        }
      }
    }
  }
  CopyLaneFit best;
  best.stall_fitted = stalls;
  best.duplex = profile.async_copies.duplex;
  best.duplex_fitted = std::find(both_lanes.begin(), both_lanes.end(), true) != both_lanes.end();
  best.block_ns = profile.async_copies.block_ns;
  best.block_fitted = blocks_per_token.size() > 1;
  double best_loss = INFINITY;
  // The points each stage fits: the lane alone, the duplex, the stall beside prefills (with the
  // lane-alone points, whose stall it also is).
  enum Stage { kLaneAlone, kDuplex, kStall };
  std::vector<bool> sets[3];
  for (auto& s : sets) s.resize(samples.size());
  for (std::size_t i = 0; i < samples.size(); ++i) {
    sets[kLaneAlone][i] = !both_lanes[i];
    sets[kDuplex][i] = both_lanes[i] && !beside_prefills[i];
    sets[kStall][i] = !both_lanes[i] || beside_prefills[i];
  }
  auto consider_on = [&](Stage stage, double speed, double stall_ns, double duplex,
                         double block_ns) {
    const std::vector<double> pred = predict(speed, stall_ns, duplex, block_ns, sets[stage]);
    double loss = 0;  // squared relative errors
    for (std::size_t i = 0; i < pred.size(); ++i) {
      if (!sets[stage][i]) continue;
      const double e = pred[i] / measured[i].duration_ns - 1;
      loss += e * e;
    }
    if (loss < best_loss) {
      best_loss = loss;
      best.lane_speed = speed;
      best.stall_ns = stall_ns;
      best.duplex = duplex;
      best.block_ns = block_ns;
    }
  };
  auto consider = [&](double speed, double stall_ns, double block_ns) {
    consider_on(kLaneAlone, speed, stall_ns, best.duplex, block_ns);
  };
  // Coarse: lane speed 0.25-4 by 0.01 (and stall 0-8 ms by 0.25 ms) at the profile's block_ns;
  // then block_ns 0-20 us by 0.5 us with the speed around the best; then fine, a pair at a time:
  // speed by 0.001 with block_ns by 50 ns, with stall by 10 us, with block_ns again. Without
  // stalls (or blocks) to fit, the profile's.
  const int stall_steps = stalls ? 32 : 0;
  for (int i = 0; i <= stall_steps; ++i) {
    const double stall = stalls ? i * 250e3 : profile.async_copies.stall_ns;
    for (int centi = 25; centi <= 400; ++centi) consider(centi / 100.0, stall, best.block_ns);
  }
  if (best.block_fitted) {
    const double speed0 = best.lane_speed, stall0 = best.stall_ns;
    for (int b = 0; b <= 40; ++b) {
      for (int d = -30; d <= 60; ++d) {
        consider(std::max(0.25, speed0 + d / 100.0), stall0, b * 500.0);
      }
    }
  }
  auto fine_blocks = [&] {
    if (!best.block_fitted) return;
    const double speed0 = best.lane_speed, stall0 = best.stall_ns, block0 = best.block_ns;
    for (int d = -10; d <= 10; ++d) {
      for (int b = -10; b <= 10; ++b) {
        consider(std::max(0.25, speed0 + d / 1000.0), stall0, std::max(0.0, block0 + b * 50.0));
      }
    }
  };
  auto fine_stalls = [&] {  // speed alone where there is no stall to fit
    const double speed0 = best.lane_speed, stall0 = best.stall_ns, block0 = best.block_ns;
    const int n = stalls ? 25 : 0;
    for (int d = -10; d <= 10; ++d) {
      for (int e = -n; e <= n; ++e) {
        consider(std::max(0.25, speed0 + d / 1000.0), std::max(0.0, stall0 + e * 10e3), block0);
      }
    }
  };
  // Rounds of the pairs until none moves (at most 6).
  for (int round = 0; round < 6; ++round) {
    const double before[3] = {best.lane_speed, best.stall_ns, best.block_ns};
    fine_blocks();
    fine_stalls();
    fine_blocks();
    if (before[0] == best.lane_speed && before[1] == best.stall_ns && before[2] == best.block_ns) {
      break;
    }
  }
  // The lane alone known: how fast each moves beside the other.
  auto fit_duplex = [&] {
    if (!best.duplex_fitted) return;
    best_loss = INFINITY;
    const double speed = best.lane_speed, stall = best.stall_ns, block = best.block_ns;
    for (int centi = 30; centi <= 100; ++centi) {
      consider_on(kDuplex, speed, stall, centi / 100.0, block);
    }
    const double duplex0 = best.duplex;
    for (int d = -10; d <= 10; ++d) {
      consider_on(kDuplex, speed, stall, std::clamp(duplex0 + d / 1000.0, 0.3, 1.0), block);
    }
  };
  fit_duplex();
  // The stall again where a long pass shows it; a step that waits for its loads while the
  // offloads still move pays it too, so the duplex is fitted again with it, in rounds until
  // neither moves (at most 4).
  best.stall_beside_prefills =
      std::find(beside_prefills.begin(), beside_prefills.end(), true) != beside_prefills.end();
  for (int round = 0; best.stall_beside_prefills && round < 4; ++round) {
    const double before[2] = {best.stall_ns, best.duplex};
    best_loss = INFINITY;
    best.stall_fitted = true;
    const double speed = best.lane_speed, duplex = best.duplex, block = best.block_ns;
    for (int i = 0; i <= 825; ++i) consider_on(kStall, speed, i * 10e3, duplex, block);
    fit_duplex();
    if (before[0] == best.stall_ns && before[1] == best.duplex) break;
  }
  best.predicted_ns = predict(best.lane_speed, best.stall_ns, best.duplex, best.block_ns,
                              std::vector<bool>(samples.size(), true));
  for (std::size_t i = 0; i < best.predicted_ns.size(); ++i) {
    const double ape = 100 * std::abs(best.predicted_ns[i] / measured[i].duration_ns - 1);
    best.mape_pct += ape / double(best.predicted_ns.size());
    best.max_ape_pct = std::max(best.max_ape_pct, ape);
  }
  return best;
}

}  // namespace inferscale
