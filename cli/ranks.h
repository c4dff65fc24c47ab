#pragma once
// @brief Plans and fleet runs over MPI ranks where the program is built with MPI (mpi/) and
// started by an MPI launcher on several ranks; one process otherwise. ranks_mpi.cpp or
// ranks_local.cpp implements it (CMake picks one).

#include <functional>
#include <optional>
#include <vector>

#include "plan/plan_config.h"
#include "plan/probe.h"
#include "sim/config/experiment.h"
#include "sim/runner.h"

namespace inferscale::cli {

/// Runs `body` (the plan command) with the probe runner: `jobs` threads of this process, or
/// every rank's workers; ranks other than 0 serve rank 0's probes and return. The exit status.
int plan_on_ranks(const plan::PlanConfig& plan, unsigned jobs,
                  const std::function<int(plan::ProbeRunner&)>& body);

/// Runs the experiment (the run command): in one process, or with each run's fleet partitioned
/// over the ranks (mpi/fleet_ranks.h); rank 0 returns the outcomes, other ranks nothing.
std::optional<std::vector<RunOutcome>> run_on_ranks(const ExperimentConfig& exp,
                                                    const RunnerOptions& opts);

}  // namespace inferscale::cli
