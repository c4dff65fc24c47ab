#pragma once
// @brief Executor kinds beyond the simulator's built-in ones (`remote`, and `gpu` where the
// libtorch executor is built), registered with sim/executor_factory.h from this folder: the
// simulator core links only the Executor interface and the cost model.

#include "executor/remote/protocol.h"
#include "sim/config/experiment.h"

namespace inferscale {

/// What an executor server must match to run this run's steps (model, GPU, GPU store bytes; 0
/// in text mode, which has no store).
remote::ExecutorIdentity executor_identity(const RunConfig& run);

}  // namespace inferscale
