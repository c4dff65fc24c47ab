#pragma once
// @brief A plan's probes over MPI ranks. Rank 0 runs the planner; its runner hands each probe
// to whichever asks first, its own threads or a worker rank (dynamic balancing), and writes the
// probe cache as results arrive. A worker rebuilds each probe from the plan file and the
// candidate's overrides (make_probe_task), checks that it resolves to the same cache key, runs
// it and sends the result back. Results come back in task order, so the plan is the one a
// single process makes.

#include <memory>

#include "plan/plan_config.h"
#include "plan/probe.h"

namespace inferscale::mpi {

/// @brief Rank 0's probe runner over every rank of the job.
class RankRunner : public plan::ProbeRunner {
 public:
  /// Tells every worker rank that the plan is done (after the last run_plan).
  virtual void stop_workers() = 0;
};

/// Rank 0's runner: `jobs` probe threads here (at least 1) and every other rank's workers.
/// A probe that fails on any rank ends run() with an error naming the rank and the probe
/// (an InputError when the probe's input was bad); results that arrived are in the cache.
std::unique_ptr<RankRunner> make_rank_runner(unsigned jobs);

/// A worker rank (> 0): asks rank 0 for probes of `plan`, runs them on `jobs` threads (at least
/// 1), sends back the results, until rank 0 says the plan is done. Returns the exit status.
int run_plan_worker(const plan::PlanConfig& plan, unsigned jobs);

}  // namespace inferscale::mpi
