#pragma once
// @brief A fleet run partitioned over MPI ranks (`mpirun -n N inferscale run EXP.yaml`): each
// rank simulates the replicas r with r % N == rank and the trace records that reach them
// (sim/partition.h says which runs qualify); rank 0 merges the parts' requests.csv and
// timeline.json in the fleet's order and the summary from every rank's figures (percentiles
// over every request's latencies), so the results are the single process's.

#include <vector>

#include "sim/config/experiment.h"
#include "sim/runner.h"

namespace inferscale::mpi {

/// Called by every rank of the job. Rank 0 writes the results and returns the outcomes; the
/// other ranks return none. A run that cannot be partitioned is an InputError (every rank
/// finds it before anything runs).
std::vector<RunOutcome> run_partitioned(const ExperimentConfig& exp, const RunnerOptions& opts);

/// The first run of `exp` (among opts.only_runs) that cannot be partitioned and why, as an
/// InputError's text; empty when all can.
std::string partition_check(const ExperimentConfig& exp, const RunnerOptions& opts);

}  // namespace inferscale::mpi
