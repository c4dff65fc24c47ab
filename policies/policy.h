#pragma once
// @brief The admission/eviction interface: a policy sees fact-sized objects, never requests or
// tensors.

#include <cstdint>
#include <limits>
#include <optional>

#include "policies/policy_hooks.h"
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
  /// Previous access on this tier (before the current one). The tier fills it in for on_hit only
  /// when the policy's needs_last_access() is true (it costs a memory access per hit);
  /// otherwise it is what the caller set.
  SimTime last_access = 0;
};

inline constexpr SimTime kNever = std::numeric_limits<SimTime>::max();

/// What a run knows beyond the tier: pins, users, and (for offline policies) the future.
/// Its speed hooks (unpin_count, prefetch) are in policy_hooks.h.
class RunView : public RunViewHooks {
 public:
  /// True while a running request uses the fact on this tier; such a fact must not be a victim.
  virtual bool pinned(FactId id) const = 0;
  /// True while the user has a request queued or running.
  virtual bool user_in_flight(UserId user) const = 0;
  /// Last time the user issued a request (or kNever if it never did).
  virtual SimTime user_last_active(UserId user) const = 0;
  /// Offline policies only. Trace position (index of the request in trace order) of the next
  /// request naming the fact after the one being processed now; kNever if none. While request i
  /// is processed, a fact it names answers its next position after i.
  virtual std::int64_t next_access(FactId id) const = 0;
  /// Offline policies only: trace position of the request being processed.
  virtual std::int64_t position() const = 0;
  /// Bound on fact ids in this run (ids are in [0, fact_id_bound())).
  virtual FactId fact_id_bound() const = 0;
};

/// Passed to victim(): everything a policy may look at to choose.
struct EvictionContext {
  SimTime now = 0;
  std::uint64_t bytes_needed = 0;        // free bytes the tier is trying to reach
  const CacheEntry* incoming = nullptr;  // the fact room is made for (null: none)
  const RunView* run = nullptr;
  bool pinned(FactId id) const { return run != nullptr && run->pinned(id); }
  // Speed hooks (RunViewHooks); a policy may ignore them.
  std::uint64_t unpin_count() const { return run != nullptr ? run->unpin_count() : kUncountedPins; }
  void prefetch(FactId id) const {
    if (run != nullptr) run->prefetch(id);
  }
};

/// @brief Eviction: one instance per store tier. A policy writes these four methods; the
/// optional hooks (on_evict, on_access, attach, slot_ids, needs_last_access) are in
/// policy_hooks.h, with defaults.
/// Contract: the callbacks other than victim() are the only mutators; victim() has no side
/// effects (two calls in a row give the same answer, and extra calls change no later decision)
/// and never returns a pinned or non-resident fact. It may return nothing although unpinned
/// facts are resident: the tier then does not insert the incoming fact (a bypass).
class EvictionPolicy : public EvictionPolicyHooks {
 public:
  /// The fact `e` entered the tier.
  virtual void on_insert(const CacheEntry& e, SimTime now) = 0;
  /// A lookup found the resident fact `e`.
  virtual void on_hit(const CacheEntry& e, SimTime now) = 0;
  /// The fact to evict next (resident, not ctx.pinned), or nothing. No side effects.
  virtual std::optional<FactId> victim(const EvictionContext& ctx) const = 0;
  /// The fact left the tier: evicted (the answer of victim()) or invalidated.
  void on_remove(FactId id) override = 0;
};

/// @brief Admission: may a fact that is not resident enter the tier? Optional hooks
/// (on_access, admits_everything) are in policy_hooks.h.
class AdmissionPolicy : public AdmissionPolicyHooks {
 public:
  virtual bool admit(const CacheEntry& e, SimTime now) = 0;
};

}  // namespace inferscale
