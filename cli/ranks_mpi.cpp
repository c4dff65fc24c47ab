// Over MPI ranks where started by an MPI launcher (cli/ranks.h).
#include <cstdio>
#include <cstdlib>

#include "cli/ranks.h"
#include "mpi/fleet_ranks.h"
#include "mpi/plan_ranks.h"
#include "mpi/world.h"
#include "traces/error.h"

namespace inferscale::cli {

namespace {

/// An error on one rank: "error: ..." (rank 0) or "error: rank R: ..." (the others).
void say(const char* what) {
  const int rank = mpi::world().rank;
  if (rank == 0) {
    std::fprintf(stderr, "error: %s\n", what);
  } else {
    std::fprintf(stderr, "error: rank %d: %s\n", rank, what);
  }
}

/// An error on any rank ends every rank, after saying why (status 2: bad input).
template <typename F>
auto or_abort_job(F&& f) {
  try {
    return f();
  } catch (const InputError& e) {
    say(e.what());
    mpi::abort_world(2);
  } catch (const std::exception& e) {
    say(e.what());
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

std::optional<std::vector<RunOutcome>> run_on_ranks(const ExperimentConfig& exp,
                                                    const RunnerOptions& opts) {
  const mpi::World w = mpi::init_world();
  if (w.size <= 1) {
    try {
      auto outcomes = run_experiment(exp, opts);
      mpi::finish_world();
      return outcomes;
    } catch (...) {
      mpi::finish_world();
      throw;
    }
  }
  // A run that cannot be partitioned is found by every rank before anything runs: rank 0 says
  // why (status 2), the others end quietly with the same status.
  if (const std::string why = mpi::partition_check(exp, opts); !why.empty()) {
    mpi::refuse_world(why);
  }
  auto outcomes = or_abort_job([&] { return mpi::run_partitioned(exp, opts); });
  mpi::finish_world();
  if (w.rank != 0) return std::nullopt;
  return outcomes;
}

}  // namespace inferscale::cli
