#include "sim/executor_factory.h"

#include "executor/cost_model/cost_model.h"
#include "traces/error.h"

namespace inferscale {

std::vector<std::string> available_executor_kinds() { return {"cost_model"}; }

void check_executor(const RunConfig& run) {
  const auto kinds = available_executor_kinds();
  for (const auto& k : kinds) {
    if (k == run.executor.kind) return;
  }
  std::string list;
  for (const auto& k : kinds) list += (list.empty() ? "" : ", ") + k;
  throw InputError(run.executor.where, "executor kind '" + run.executor.kind +
                                           "' is not available in this build (available: " +
                                           list + ")");
}

std::unique_ptr<Executor> make_executor(const RunConfig& run, int) {
  check_executor(run);
  return std::make_unique<CostModelExecutor>(CostModel(run.model, CostRates::from_gpu(run.gpu)));
}

}  // namespace inferscale
