#include "sim/executor_factory.h"

#include "executor/cost_model/cost_model.h"
#include "executor/remote/client.h"
#include "traces/error.h"

namespace inferscale {

std::vector<std::string> available_executor_kinds() { return {"cost_model", "remote"}; }

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

remote::ExecutorIdentity executor_identity(const RunConfig& run) {
  remote::ExecutorIdentity id;
  id.model = run.model;
  id.gpu = run.gpu;
  const bool store = run.serving.mode == ServingMode::kKvInject && run.store.gpu.enabled;
  id.pool_capacity_bytes = store ? run.store.gpu.capacity_bytes : 0;
  return id;
}

std::unique_ptr<Executor> make_executor(const RunConfig& run, int replica) {
  check_executor(run);
  if (run.executor.kind == "remote") {
    const auto& endpoints = run.executor.endpoints;
    remote::RemoteOptions options;
    options.endpoint = endpoints.at(static_cast<std::size_t>(replica) % endpoints.size());
    options.connect_timeout_s = run.executor.connect_timeout_s;
    options.timeout_s = run.executor.timeout_s;
    return std::make_unique<remote::RemoteExecutor>(options, executor_identity(run));
  }
  return std::make_unique<CostModelExecutor>(CostModel(run.model, CostRates::from_gpu(run.gpu)));
}

}  // namespace inferscale
