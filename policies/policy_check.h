#pragma once
// @brief Property checks of an eviction policy against its contract (policy.h), on generated
// access sequences: what `inferscale policy check PLUGIN.so` and the tests run, in-tree policies
// and plugins alike.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "policies/policy.h"

namespace inferscale {

/// The generated sequences: requests of 1..4 distinct facts (skewed toward low ids, sizes 10..50
/// bytes, 6 users), a few other resident facts pinned per request (other requests running), a
/// fact invalidated now and then. Capacities alternate between 10 % and 30 % of all facts' bytes.
struct PolicyCheckOptions {
  std::uint64_t seed = 1;
  std::size_t sequences = 4;
  std::size_t facts = 100;
  std::size_t requests = 1500;
};

/// One property: passed, or the first violation found (where and what).
struct PropertyResult {
  std::string name;
  std::string description;
  bool passed = true;
  std::string reason;
};

/// @brief The properties in a fixed order: capacity, pins, victim() side-effect free,
/// determinism.
struct PolicyCheckReport {
  std::vector<PropertyResult> properties;
  bool passed() const;
  const PropertyResult* find(const std::string& name) const;
};

/// Makes a fresh policy for a store of `capacity_bytes`; two calls must give policies that
/// start alike (same parameters, same seed).
using PolicyFactory = std::function<std::unique_ptr<EvictionPolicy>(std::uint64_t capacity_bytes)>;

/// @brief Replays the generated sequences through a small store that trusts nothing the policy
/// answers, and checks:
///  - capacity: every victim is a resident fact, so evicting it frees its bytes; the store never
///    holds more than its capacity;
///  - pins: no victim is pinned by a running request;
///  - victim() side-effect free: two calls in a row give the same answer, and extra calls (with
///    other pins, another incoming fact, another time) change no later decision;
///  - determinism: two runs of the same sequence give identical decisions.
/// A store refuses a bad victim (the incoming fact is not inserted) and goes on. An exception
/// thrown by the policy fails the property whose run it interrupted.
PolicyCheckReport check_eviction_policy(const PolicyFactory& make,
                                        const PolicyCheckOptions& options = {});

}  // namespace inferscale
