#include <algorithm>

#include "sim/batch_scheduler.h"
#include "traces/error.h"

namespace inferscale {

std::vector<SchedulerInfo>& SchedulerRegistry::all() {
  static std::vector<SchedulerInfo> table;
  return table;
}

const SchedulerInfo* SchedulerRegistry::find(const std::string& name) {
  for (const auto& info : all()) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

std::unique_ptr<BatchScheduler> SchedulerRegistry::make(const std::string& name,
                                                        const Params& params,
                                                        const std::string& where) {
  const SchedulerInfo* info = find(name);
  if (info == nullptr) {
    std::vector<std::string> names;
    for (const auto& i : all()) names.push_back(i.name);
    std::sort(names.begin(), names.end());
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    throw InputError(where, "unknown scheduler '" + name + "' (known: " + known + ")");
  }
  auto scheduler = info->factory(params);
  params.reject_unknown(info->params);
  return scheduler;
}

}  // namespace inferscale
