#pragma once
// @brief Builds the executor a run asks for (executor.kind) for each replica.

#include <memory>
#include <string>
#include <vector>

#include "executor/executor.h"
#include "sim/config/experiment.h"

namespace inferscale {

/// Executor kinds this build offers.
std::vector<std::string> available_executor_kinds();
/// InputError at executor.kind when the kind is unknown or unavailable in this build.
void check_executor(const RunConfig& run);
std::unique_ptr<Executor> make_executor(const RunConfig& run, int replica);

}  // namespace inferscale
