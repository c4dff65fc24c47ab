#pragma once
// @brief Builds the executor a run asks for (executor.kind) for each replica.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "executor/cost_model/calibrated.h"
#include "executor/executor.h"
#include "sim/config/experiment.h"

namespace inferscale {

/// Executor kinds this build offers (the built-in ones, then those registered).
std::vector<std::string> available_executor_kinds();

/// Makes replica i's executor of an optional kind (e.g. `gpu`, in builds with libtorch).
using ExecutorMaker = std::function<std::unique_ptr<Executor>(const RunConfig& run, int replica)>;
/// Checks a run for that kind before anything runs (InputError).
using ExecutorCheck = std::function<void(const RunConfig& run)>;
/// Registers an optional kind from the file that implements it (linked into the program).
bool register_executor_kind(const std::string& name, ExecutorMaker make, ExecutorCheck check);
/// InputError at executor.kind when the kind is unknown or unavailable in this build, or when a
/// `calibrated` run's profile is unreadable or was calibrated for another model or GPU.
void check_executor(const RunConfig& run);
/// A `calibrated` run's profile, checked against the run's model and GPU (InputError).
CalibrationProfile calibrated_profile(const RunConfig& run);
/// A fact's encode (recompute) cost in ns, priced as the run prices steps: by its profile for
/// `calibrated`, else by the roofline cost model.
std::function<SimTime(std::uint32_t tokens, std::uint32_t context_tokens)> encode_pricing(
    const RunConfig& run);
/// The scheduler's estimate of a host -> GPU copy of `bytes` (one fact) in ns, with which it
/// plans when an asynchronous load is done: the roofline cost model's (the GPU preset's PCIe
/// rate) whatever the executor, so that a calibrated and a hardware-in-the-loop run plan alike
/// (how long the copies really take is the executor's: the calibrated one models the copy
/// lanes, see executor/cost_model/copy_engine.h).
std::function<SimTime(std::uint64_t bytes)> load_pricing(const RunConfig& run);
/// Replica i's executor of the run's kind: `cost_model` and `calibrated` here, the others
/// (`remote`, `gpu`) from the files that register them (cli/executor_kind_*.cpp).
std::unique_ptr<Executor> make_executor(const RunConfig& run, int replica);

}  // namespace inferscale
