// executor kind `remote`: every step runs on an executor server (`inferscale serve-executor`)
// over TCP; replica i uses endpoints[i % endpoints] and a lost connection fails the run with
// ExecutorFailure.
#include <memory>

#include "cli/executor_kinds.h"
#include "executor/remote/client.h"
#include "sim/executor_factory.h"

namespace inferscale {

remote::ExecutorIdentity executor_identity(const RunConfig& run) {
  remote::ExecutorIdentity id;
  id.model = run.model;
  id.gpu = run.gpu;
  const bool store = run.serving.mode == ServingMode::kKvInject && run.store.gpu.enabled;
  id.pool_capacity_bytes = store ? run.store.gpu.capacity_bytes : 0;
  return id;
}

namespace {

std::unique_ptr<Executor> make_remote(const RunConfig& run, int replica) {
  const auto& endpoints = run.executor.endpoints;
  remote::RemoteOptions options;
  options.endpoint = endpoints.at(static_cast<std::size_t>(replica) % endpoints.size());
  options.connect_timeout_s = run.executor.connect_timeout_s;
  options.timeout_s = run.executor.timeout_s;
  return std::make_unique<remote::RemoteExecutor>(options, executor_identity(run));
}

const bool kRegistered = register_executor_kind("remote", make_remote, nullptr);

}  // namespace

}  // namespace inferscale
