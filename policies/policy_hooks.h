#pragma once
// @brief Optional hooks of the policy interface, with defaults: a policy author may ignore this
// file. policy.h shows what every policy writes (on_insert, on_hit, victim, on_remove; admit);
// the classes there derive from the bases here, so a policy overrides a hook only when it wants
// more information (on_access, on_evict, attach) or more speed (slot_ids, needs_last_access,
// admits_everything, RunView::unpin_count and prefetch). The store tier runs every policy through
// the same calls either way.

#include <cstdint>
#include <limits>

#include "traces/types.h"

namespace inferscale {

struct CacheEntry;
struct EvictionContext;
class RunView;

/// RunView::unpin_count() of a view that does not count unpins.
inline constexpr std::uint64_t kUncountedPins = std::numeric_limits<std::uint64_t>::max();

/// @brief The optional part of EvictionPolicy (policy.h), with defaults.
class EvictionPolicyHooks {
 public:
  virtual ~EvictionPolicyHooks() = default;
  /// Declared here for on_evict's default; documented with EvictionPolicy.
  virtual void on_remove(FactId id) = 0;

  // More information.

  /// The tier evicted `id`, the answer of victim(ctx) just before, with the same `ctx`. A policy
  /// whose search moves state (CLOCK's hand, SIEVE's visited bits) computes the would-be victim
  /// in victim() and performs the moves here (libCacheSim's to_evict/evict split).
  /// Default: on_remove.
  virtual void on_evict(FactId id, const EvictionContext& /*ctx*/) { on_remove(id); }
  /// Called for every lookup on the tier, hit or miss, before on_hit/admission. Default: nothing.
  virtual void on_access(const CacheEntry& /*e*/, SimTime /*now*/) {}
  /// The run's view, given before the first access (may be null), for callbacks other than
  /// victim() (offline policies read RunView::next_access in on_insert). Default: ignored.
  virtual void attach(const RunView* /*view*/) {}

  // More speed.

  /// Whether on_hit needs CacheEntry::last_access from the tier (a memory access per hit).
  /// Default: no.
  virtual bool needs_last_access() const { return false; }
  /// Whether the tier may name facts by slot ids: dense ids of the resident facts, one per
  /// resident, reused after a removal. Only for a policy that keeps metadata of resident facts
  /// alone and decides by their order, never by the ids' values, by on_access (not called then:
  /// a missing fact has no slot), by ctx.incoming's id or by any field of a CacheEntry but its
  /// id (the run may leave the others unset). Its per-fact arrays then span the
  /// tier's residents, not every fact of the run, and stay in the core's cache. The RunView it
  /// is given speaks slot ids too. Default: no (fact ids).
  virtual bool slot_ids() const { return false; }
};

/// @brief The optional part of AdmissionPolicy (policy.h), with defaults.
class AdmissionPolicyHooks {
 public:
  virtual ~AdmissionPolicyHooks() = default;
  /// Every lookup on the tier, hit or miss (frequency sketches learn here). Default: nothing.
  virtual void on_access(const CacheEntry& /*e*/, SimTime /*now*/) {}
  /// Whether it admits every fact and learns nothing from on_access: the tier then neither asks
  /// nor informs it. Default: no.
  virtual bool admits_everything() const { return false; }
};

/// @brief The optional part of RunView (policy.h): what a run offers a policy for speed alone.
class RunViewHooks {
 public:
  virtual ~RunViewHooks() = default;
  /// Counts the times a pinned fact became unpinned. While it is unchanged, a fact seen pinned is
  /// still pinned, so a policy may skip facts it found pinned before (PinnedTail). Default:
  /// kUncountedPins, and nothing may be skipped.
  virtual std::uint64_t unpin_count() const { return kUncountedPins; }
  /// A hint, no more: the policy will soon ask about `id` (its next victim), so the view may
  /// start loading what pinned(id) reads. Default: nothing.
  virtual void prefetch(FactId /*id*/) const {}
};

}  // namespace inferscale
