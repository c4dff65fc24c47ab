#pragma once
// @brief The admission/eviction interface: a policy sees fact-sized objects, never requests or
// tensors.

#include <cstdint>
#include <limits>
#include <optional>

#include "traces/types.h"

namespace inferscale {

/// One fact as a store tier sees it. Inside a run fact ids are dense (0..facts-1), so a policy may
/// keep its metadata in vectors indexed by id.
struct CacheEntry {
  FactId id = 0;
  UserId user = 0;
  std::uint64_t bytes = 0;
  std::uint32_t tokens = 0;
  SimTime recompute_cost_ns = 0;  // encode time the executor's cost model gives for this fact
  SimTime created = 0;            // when the fact appeared (memory write or trace start)
  SimTime last_access = 0;        // previous access on this tier (before the current one)
};

inline constexpr SimTime kNever = std::numeric_limits<SimTime>::max();

/// What a run knows beyond the tier: pins, users, and (for offline policies) the future.
class RunView {
 public:
  virtual ~RunView() = default;
  /// True while a running request uses the fact on this tier; such a fact must not be a victim.
  virtual bool pinned(FactId id) const = 0;
  /// True while the user has a request queued or running.
  virtual bool user_in_flight(UserId user) const = 0;
  /// Last time the user issued a request (or kNever if it never did).
  virtual SimTime user_last_active(UserId user) const = 0;
  /// Next time the fact will be requested after `now` (kNever if never). Offline policies only.
  virtual SimTime next_access(FactId id, SimTime now) const = 0;
  /// Bound on fact ids in this run (ids are in [0, fact_id_bound())).
  virtual FactId fact_id_bound() const = 0;
};

/// Passed to victim(): everything a policy may look at to choose.
struct EvictionContext {
  SimTime now = 0;
  std::uint64_t bytes_needed = 0;  // free bytes the tier is trying to reach
  const RunView* run = nullptr;
  bool pinned(FactId id) const { return run != nullptr && run->pinned(id); }
};

/// @brief Eviction: one instance per store tier.
/// Contract: on_insert/on_hit/on_remove are the only mutators; victim() has no side effects (two
/// calls in a row give the same answer) and never returns a pinned or non-resident fact.
class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  virtual void on_insert(const CacheEntry& e, SimTime now) = 0;
  virtual void on_hit(const CacheEntry& e, SimTime now) = 0;
  virtual std::optional<FactId> victim(const EvictionContext& ctx) const = 0;
  /// The fact left the tier (evicted, invalidated or moved).
  virtual void on_remove(FactId id) = 0;
  /// Called for every lookup on the tier, hit or miss, before on_hit/admission. Default: nothing.
  virtual void on_access(const CacheEntry& /*e*/, SimTime /*now*/) {}
};

/// @brief Admission: may a fact that is not resident enter the tier?
class AdmissionPolicy {
 public:
  virtual ~AdmissionPolicy() = default;
  virtual bool admit(const CacheEntry& e, SimTime now) = 0;
  /// Every lookup on the tier, hit or miss (frequency sketches learn here). Default: nothing.
  virtual void on_access(const CacheEntry& /*e*/, SimTime /*now*/) {}
};

}  // namespace inferscale
