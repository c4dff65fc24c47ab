#include "sim/executor_factory.h"

#include <algorithm>

#include "executor/cost_model/calibrated.h"
#include "executor/cost_model/cost_model.h"
#include "sim/config/profile.h"
#include "traces/error.h"

namespace inferscale {

namespace {

struct OptionalKind {
  std::string name;
  ExecutorMaker make;
  ExecutorCheck check;
};

std::vector<OptionalKind>& optional_kinds() {
  static std::vector<OptionalKind> kinds;
  return kinds;
}

const OptionalKind* find_optional(const std::string& name) {
  for (const auto& k : optional_kinds()) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

/// The run's roofline: its model (per GPU of `tp`), the GPU's rates (matrix products at the fp8
/// peak with `weights: fp8`) and the all-reduce link.
CostModel roofline(const RunConfig& run) {
  CostModel m(run.model, CostRates::from_gpu(run.gpu, run.model.weight_dtype_bytes() == 1),
              TensorParallel::from_gpu(run.gpu, run.tp));
  m.set_fact_kv_bytes(double(run.fact_kv_bytes_per_token_per_gpu()));
  return m;
}

}  // namespace

bool register_executor_kind(const std::string& name, ExecutorMaker make, ExecutorCheck check) {
  optional_kinds().push_back(OptionalKind{name, std::move(make), std::move(check)});
  return true;
}

std::vector<std::string> available_executor_kinds() {
  std::vector<std::string> kinds{"cost_model", "calibrated"};
  for (const auto& k : optional_kinds()) kinds.push_back(k.name);
  return kinds;
}

CalibrationProfile calibrated_profile(const RunConfig& run) {
  CalibrationProfile p = load_profile(run.executor.profile, run.executor.where);
  const std::string path = profile_path(run.executor.profile);
  check_profile_model(p, path, run.model, run.executor.where);
  if (p.gpu != run.gpu.name) {
    throw InputError(run.executor.where, "profile " + path + " was calibrated on GPU '" + p.gpu +
                                             "', the run's GPU is '" + run.gpu.name + "'");
  }
  return p;
}

void check_executor(const RunConfig& run) {
  const auto kinds = available_executor_kinds();
  const bool known = std::find(kinds.begin(), kinds.end(), run.executor.kind) != kinds.end();
  if (known && run.executor.kind == "calibrated") calibrated_profile(run);  // readable, same model
  if (const OptionalKind* k = find_optional(run.executor.kind); k != nullptr && k->check) {
    k->check(run);
  }
  if (known) return;
  std::string list;
  for (const auto& k : kinds) list += (list.empty() ? "" : ", ") + k;
  throw InputError(run.executor.where, "executor kind '" + run.executor.kind +
                                           "' is not available in this build (available: " + list +
                                           ")");
}

std::function<SimTime(std::uint32_t, std::uint32_t)> encode_pricing(const RunConfig& run) {
  if (run.executor.kind == "calibrated") {
    auto model = std::make_shared<CalibratedCostModel>(run.model, calibrated_profile(run));
    return [model](std::uint32_t t, std::uint32_t c) { return model->encode_cost_ns(t, c); };
  }
  auto model = std::make_shared<CostModel>(roofline(run));
  return [model](std::uint32_t t, std::uint32_t c) { return model->encode_cost_ns(t, c); };
}

std::function<SimTime(std::uint64_t)> load_pricing(const RunConfig& run) {
  auto model = std::make_shared<CostModel>(roofline(run));
  return [model](std::uint64_t bytes) { return model->load_cost_ns(bytes); };
}

std::unique_ptr<Executor> make_executor(const RunConfig& run, int replica) {
  check_executor(run);
  if (const OptionalKind* k = find_optional(run.executor.kind)) return k->make(run, replica);
  if (run.executor.kind == "calibrated") {
    CalibrationProfile profile = calibrated_profile(run);
    // A profile of the GPU executor prices the rows it pads a pass with; the roofline cost
    // model, profiled, pads nothing.
    const RowPadding padding =
        profile.executor == "gpu"
            ? RowPadding::of_executor(run.executor.warm_rows, run.scheduler.max_batch_tokens)
            : RowPadding{};
    CalibratedCostModel model(run.model, std::move(profile), padding);
    model.set_fact_kv_bytes(double(run.fact_kv_bytes_per_token_per_gpu()));
    return std::make_unique<CalibratedExecutor>(std::move(model), run.executor.copies_beside_pass);
  }
  return std::make_unique<CostModelExecutor>(roofline(run));
}

}  // namespace inferscale
