#include "policies/registry.h"

#include <algorithm>

namespace inferscale {

std::vector<EvictionInfo>& PolicyRegistry::eviction() {
  static std::vector<EvictionInfo> table;
  return table;
}

std::vector<AdmissionInfo>& PolicyRegistry::admission() {
  static std::vector<AdmissionInfo> table;
  return table;
}

namespace {

template <class Info>
const Info* find_in(const std::vector<Info>& table, const std::string& name) {
  for (const auto& info : table) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

template <class Info>
std::string known_names(const std::vector<Info>& table) {
  std::vector<std::string> names;
  for (const auto& info : table) names.push_back(info.name);
  std::sort(names.begin(), names.end());
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

template <class Policy, class Info>
std::unique_ptr<Policy> make_from(const std::vector<Info>& table, const char* kind,
                                  const std::string& name, const PolicyArgs& args,
                                  const std::string& where) {
  const Info* info = find_in(table, name);
  if (info == nullptr) {
    throw InputError(where, std::string("unknown ") + kind + " policy '" + name +
                                "' (known: " + known_names(table) + ")");
  }
  auto policy = info->factory(args);
  args.params.reject_unknown(info->params);
  return policy;
}

}  // namespace

const EvictionInfo* PolicyRegistry::find_eviction(const std::string& name) {
  return find_in(eviction(), name);
}
const AdmissionInfo* PolicyRegistry::find_admission(const std::string& name) {
  return find_in(admission(), name);
}

std::unique_ptr<EvictionPolicy> PolicyRegistry::make_eviction(const std::string& name,
                                                              const PolicyArgs& args,
                                                              const std::string& where) {
  return make_from<EvictionPolicy>(eviction(), "eviction", name, args, where);
}

std::unique_ptr<AdmissionPolicy> PolicyRegistry::make_admission(const std::string& name,
                                                                const PolicyArgs& args,
                                                                const std::string& where) {
  return make_from<AdmissionPolicy>(admission(), "admission", name, args, where);
}

}  // namespace inferscale
