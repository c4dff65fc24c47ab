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
  /// Previous access on this tier (before the current one). The tier fills it in for on_hit only
  /// when the policy's needs_last_access() is true (it costs a memory access per hit);
  /// otherwise it is what the caller set.
  SimTime last_access = 0;
};

inline constexpr SimTime kNever = std::numeric_limits<SimTime>::max();
/// RunView::unpin_count() of a view that does not count unpins.
inline constexpr std::uint64_t kUncountedPins = std::numeric_limits<std::uint64_t>::max();

/// What a run knows beyond the tier: pins, users, and (for offline policies) the future.
class RunView {
 public:
  virtual ~RunView() = default;
  /// True while a running request uses the fact on this tier; such a fact must not be a victim.
  virtual bool pinned(FactId id) const = 0;
  /// Counts the times a pinned fact became unpinned. While it is unchanged, a fact seen pinned is
  /// still pinned, so a policy may skip facts it found pinned before (PinnedTail). Default:
  /// kUncountedPins, and nothing may be skipped.
  virtual std::uint64_t unpin_count() const { return kUncountedPins; }
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
  /// A hint, no more: the policy will soon ask about `id` (its next victim), so the view may
  /// start loading what pinned(id) reads. Default: nothing.
  virtual void prefetch(FactId /*id*/) const {}
};

/// Passed to victim(): everything a policy may look at to choose.
struct EvictionContext {
  SimTime now = 0;
  std::uint64_t bytes_needed = 0;        // free bytes the tier is trying to reach
  const CacheEntry* incoming = nullptr;  // the fact room is made for (null: none)
  const RunView* run = nullptr;
  bool pinned(FactId id) const { return run != nullptr && run->pinned(id); }
  std::uint64_t unpin_count() const { return run != nullptr ? run->unpin_count() : kUncountedPins; }
  void prefetch(FactId id) const {
    if (run != nullptr) run->prefetch(id);
  }
};

/// @brief Eviction: one instance per store tier.
/// Contract: on_insert/on_hit/on_access/on_evict/on_remove are the only mutators; victim() has no
/// side effects (two calls in a row give the same answer, and extra calls change no later
/// decision) and never returns a pinned or non-resident fact. It may return nothing although
/// unpinned facts are resident: the tier then does not insert the incoming fact (a bypass).
/// Policies that move hands or clear bits while searching (CLOCK, SIEVE, S3-FIFO) compute the
/// would-be victim in victim() and perform those deferred changes in on_evict().
class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  virtual void on_insert(const CacheEntry& e, SimTime now) = 0;
  virtual void on_hit(const CacheEntry& e, SimTime now) = 0;
  virtual std::optional<FactId> victim(const EvictionContext& ctx) const = 0;
  /// The fact left the tier for another reason than eviction (invalidated or moved).
  virtual void on_remove(FactId id) = 0;
  /// The tier evicted `id`, the answer of victim(ctx) just before, with the same `ctx`.
  /// Default: on_remove.
  virtual void on_evict(FactId id, const EvictionContext& /*ctx*/) { on_remove(id); }
  /// Called for every lookup on the tier, hit or miss, before on_hit/admission. Default: nothing.
  virtual void on_access(const CacheEntry& /*e*/, SimTime /*now*/) {}
  /// The run's view, given once before the first access (may be null). Default: ignored.
  virtual void attach(const RunView* /*view*/) {}
  /// Whether on_hit needs CacheEntry::last_access from the tier. Default: no.
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

/// @brief Admission: may a fact that is not resident enter the tier?
class AdmissionPolicy {
 public:
  virtual ~AdmissionPolicy() = default;
  virtual bool admit(const CacheEntry& e, SimTime now) = 0;
  /// Whether it admits every fact and learns nothing from on_access: the tier then neither asks
  /// nor informs it. Default: no.
  virtual bool admits_everything() const { return false; }
  /// Every lookup on the tier, hit or miss (frequency sketches learn here). Default: nothing.
  virtual void on_access(const CacheEntry& /*e*/, SimTime /*now*/) {}
};

}  // namespace inferscale
