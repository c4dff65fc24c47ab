// One process: the build has no MPI (cli/ranks.h).
#include "cli/ranks.h"

namespace inferscale::cli {

int plan_on_ranks(const plan::PlanConfig&, unsigned jobs,
                  const std::function<int(plan::ProbeRunner&)>& body) {
  auto runner = plan::make_local_runner(jobs);
  return body(*runner);
}

std::optional<std::vector<RunOutcome>> run_on_ranks(const ExperimentConfig& exp,
                                                    const RunnerOptions& opts) {
  return run_experiment(exp, opts);
}

}  // namespace inferscale::cli
