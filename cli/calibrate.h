#pragma once
// @brief `inferscale calibrate`: the executors it can profile. `cost_model` is always there; an
// executor built only with an optional dependency (`gpu`, with libtorch) registers itself from
// its own file.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "executor/cost_model/calibration_grid.h"
#include "executor/executor.h"
#include "executor/model_config.h"

namespace inferscale::cli {

/// What an executor to profile is built for.
struct CalibrationTarget {
  ModelConfig model;
  GpuConfig gpu;
  CalibrationNeeds needs;  // what the grid holds at once (cache rows, pool blocks, positions)
  std::string device = "cuda";
  std::uint64_t seed = 0;  // random weights (timing does not depend on their values)
  /// GpuExecutorOptions::copies_beside_pass of the executor profiled (--copies-first: false).
  bool copies_beside_pass = true;
};

struct ProfiledExecutor {
  std::unique_ptr<Executor> executor;
  std::string machine;  // the device's name, recorded in the profile
  /// The executor's copy-issue totals so far; empty where it does not measure them (then
  /// --copy-lanes keeps the profile's issue_ns).
  std::function<CopyIssue()> copy_issue;
};

using CalibrationExecutorFactory = ProfiledExecutor (*)(const CalibrationTarget& target);

/// Registers an executor kind for `calibrate --executor <name>`; returns true (for a static).
bool register_calibration_executor(const std::string& name, CalibrationExecutorFactory factory);
/// Kinds `calibrate` can profile in this build.
std::vector<std::string> calibration_executor_names();

}  // namespace inferscale::cli
