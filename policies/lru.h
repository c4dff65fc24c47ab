#pragma once
// @brief LRU's class, declared in a header only for the store tier's direct path (StoreTier
// calls insert, hit, remove, pick and evict without virtual calls). The policy, its
// EvictionPolicy methods and its registration are in lru.cpp.

#include <optional>

#include "policies/lru_order.h"
#include "policies/pinned_tail.h"
#include "policies/policy.h"

namespace inferscale {

/// @brief LRU. The EvictionPolicy methods (lru.cpp) call the inline core below, which a store
/// tier may call instead with its own view of pins: both run the same code, so they decide
/// alike. The order is an LruOrder (a queue, not a linked list): a hit appends, and the next
/// victims are read in order.
class Lru final : public EvictionPolicy {
 public:
  void on_insert(const CacheEntry& e, SimTime now) override;
  void on_hit(const CacheEntry& e, SimTime now) override;
  void on_remove(FactId id) override;
  std::optional<FactId> victim(const EvictionContext& ctx) const override;
  void on_evict(FactId id, const EvictionContext& ctx) override;
  bool slot_ids() const override;

  // The direct core.
  void insert(std::uint32_t id) { list_.push_front(id); }
  void hit(std::uint32_t id) {
    pinned_tail_.unlink(list_, id);
    list_.move_to_front(id);
  }
  void remove(std::uint32_t id) {
    pinned_tail_.unlink(list_, id);
    list_.erase(id);
  }
  /// The victim for `ctx` (pinned, unpin_count), or LruOrder::kNil.
  template <class Ctx>
  std::uint32_t pick(const Ctx& ctx) const {
    return pinned_tail_.first_unpinned(list_, ctx);
  }
  /// Evicts `id`, the answer of pick(ctx). The next victim is most likely the new tail: its
  /// records (through ctx.prefetch) start loading while the run places the fact this eviction
  /// made room for.
  template <class Ctx>
  void evict(std::uint32_t id, const Ctx& ctx) {
    remove(id);
    const std::uint32_t tail = list_.back();
    if (tail != LruOrder::kNil) ctx.prefetch(tail);
  }
  /// A walk over the ids from the back (the next victims but for pins), for a store that
  /// starts loading their records (a hint): LruOrder::walk_start and walk_next.
  std::size_t walk_start() const { return list_.walk_start(); }
  std::uint32_t walk_next(std::size_t& cursor) const { return list_.walk_next(cursor); }

 private:
  LruOrder list_;
  PinnedTail pinned_tail_;
};

}  // namespace inferscale
