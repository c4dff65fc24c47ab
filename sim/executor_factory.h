#pragma once
// @brief Builds the executor a run asks for (executor.kind) for each replica.

#include <memory>
#include <string>
#include <vector>

#include "executor/executor.h"
#include "executor/remote/protocol.h"
#include "sim/config/experiment.h"

namespace inferscale {

/// Executor kinds this build offers.
std::vector<std::string> available_executor_kinds();
/// InputError at executor.kind when the kind is unknown or unavailable in this build.
void check_executor(const RunConfig& run);
/// Replica i of a `remote` run uses endpoints[i % endpoints]; its connection fails with
/// ExecutorFailure.
std::unique_ptr<Executor> make_executor(const RunConfig& run, int replica);
/// What an executor server must match to run this run's steps (model, GPU, GPU store bytes; 0
/// in text mode, which has no store).
remote::ExecutorIdentity executor_identity(const RunConfig& run);

}  // namespace inferscale
