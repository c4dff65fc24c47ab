#pragma once
// @brief The policy registry: policies register themselves by name from their own file.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "policies/params.h"
#include "policies/policy.h"

namespace inferscale {

/// What a policy is given when a tier creates it.
struct PolicyArgs {
  Params params;
  std::uint64_t capacity_bytes = 0;
  std::uint64_t seed = 0;
};

template <class Policy>
struct PolicyInfo {
  std::string name;
  std::string description;
  std::vector<ParamInfo> params;
  std::function<std::unique_ptr<Policy>(const PolicyArgs&)> factory;
  bool offline = false;  // needs RunView::next_access
};

using EvictionInfo = PolicyInfo<EvictionPolicy>;
using AdmissionInfo = PolicyInfo<AdmissionPolicy>;

/// @brief Name -> factory tables. Function-local statics: no static-initialisation-order trouble.
class PolicyRegistry {
 public:
  static std::vector<EvictionInfo>& eviction();
  static std::vector<AdmissionInfo>& admission();

  /// Creates a policy; an unknown name throws InputError at `where` listing the known names.
  /// Unknown parameters are rejected after construction.
  static std::unique_ptr<EvictionPolicy> make_eviction(const std::string& name,
                                                       const PolicyArgs& args,
                                                       const std::string& where);
  static std::unique_ptr<AdmissionPolicy> make_admission(const std::string& name,
                                                         const PolicyArgs& args,
                                                         const std::string& where);
  static const EvictionInfo* find_eviction(const std::string& name);
  static const AdmissionInfo* find_admission(const std::string& name);
};

struct Registrar {
  explicit Registrar(EvictionInfo info) { PolicyRegistry::eviction().push_back(std::move(info)); }
  explicit Registrar(AdmissionInfo info) { PolicyRegistry::admission().push_back(std::move(info)); }
};

}  // namespace inferscale

#define INFERSCALE_CONCAT_INNER(a, b) a##b
#define INFERSCALE_CONCAT(a, b) INFERSCALE_CONCAT_INNER(a, b)

/// Registers an eviction policy: INFERSCALE_REGISTER_EVICTION(lru, "least recently used",
/// {ParamInfo...}, factory) (the parameter list may hold commas). The library is an OBJECT library,
/// so the registration survives linking.
#define INFERSCALE_REGISTER_EVICTION(id, description, ...)                           \
  static const ::inferscale::Registrar INFERSCALE_CONCAT(inferscale_eviction_, id) { \
    ::inferscale::EvictionInfo {                                                     \
#id, description, __VA_ARGS__, false                                           \
    }                                                                                \
  }

/// Same, for an offline policy that reads the future (RunView::next_access).
#define INFERSCALE_REGISTER_OFFLINE_EVICTION(id, description, ...)                   \
  static const ::inferscale::Registrar INFERSCALE_CONCAT(inferscale_eviction_, id) { \
    ::inferscale::EvictionInfo {                                                     \
#id, description, __VA_ARGS__, true                                            \
    }                                                                                \
  }

#define INFERSCALE_REGISTER_ADMISSION(id, description, ...)                           \
  static const ::inferscale::Registrar INFERSCALE_CONCAT(inferscale_admission_, id) { \
    ::inferscale::AdmissionInfo {                                                     \
#id, description, __VA_ARGS__, false                                            \
    }                                                                                 \
  }
