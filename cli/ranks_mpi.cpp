// Over MPI ranks where started by an MPI launcher (cli/ranks.h).
#include <cstdio>

#include "cli/ranks.h"
#include "mpi/plan_ranks.h"
#include "mpi/world.h"
#include "traces/error.h"

namespace inferscale::cli {

namespace {

/// On rank 0 of several: an error ends every rank, after saying why (status 2: bad input).
template <typename F>
auto or_abort_job(F&& f) {
  try {
    return f();
  } catch (const InputError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    mpi::abort_world(2);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    mpi::abort_world(1);
  }
}

}  // namespace

int plan_on_ranks(const plan::PlanConfig& plan, unsigned jobs,
                  const std::function<int(plan::ProbeRunner&)>& body) {
  const mpi::World w = mpi::init_world();
  if (w.size <= 1) {
    auto runner = plan::make_local_runner(jobs);
    int status = 0;
    try {
      status = body(*runner);
    } catch (...) {
      mpi::finish_world();
      throw;
    }
    mpi::finish_world();
    return status;
  }
  // Several ranks: one probe at a time per rank unless --jobs says more.
  if (w.rank > 0) {
    const int status = or_abort_job([&] { return mpi::run_plan_worker(plan, jobs); });
    mpi::finish_world();
    return status;
  }
  auto runner = mpi::make_rank_runner(jobs);
  const int status = or_abort_job([&] { return body(*runner); });
  runner->stop_workers();
  mpi::finish_world();
  return status;
}

std::vector<RunOutcome> run_on_ranks(const ExperimentConfig& exp, const RunnerOptions& opts) {
  return run_experiment(exp, opts);
}

}  // namespace inferscale::cli
