#pragma once
// @brief LRU: evict the least recently used fact. Declared in a header (registered in lru.cpp)
// so that a store tier can call it directly, without virtual calls (StoreTier's direct path).

#include <optional>

#include "policies/id_list.h"
#include "policies/pinned_tail.h"
#include "policies/policy.h"

namespace inferscale {

/// @brief LRU over slot ids. The virtual interface forwards to the direct one (insert, hit,
/// remove, pick, evict), which a store tier may call instead with its own view of pins: both
/// run the same code, so they decide alike.
class Lru final : public EvictionPolicy {
 public:
  void insert(std::uint32_t id) { list_.push_front(id); }
  void hit(std::uint32_t id) {
    pinned_tail_.unlink(list_, id);
    list_.move_to_front(id);
  }
  void remove(std::uint32_t id) {
    pinned_tail_.unlink(list_, id);
    list_.erase(id);
  }
  /// The victim for `ctx` (pinned, unpin_count), or IdList::kNil.
  template <class Ctx>
  std::uint32_t pick(const Ctx& ctx) const {
    return pinned_tail_.first_unpinned(list_, ctx);
  }
  /// Evicts `id`, the answer of pick(ctx). The next victim is most likely the new tail: its
  /// records (through ctx.prefetch) and its neighbour's node, which its own eviction writes,
  /// start loading while the run places the fact this eviction made room for.
  template <class Ctx>
  void evict(std::uint32_t id, const Ctx& ctx) {
    remove(id);
    const std::uint32_t tail = list_.back();
    if (tail == IdList::kNil) return;
    ctx.prefetch(tail);
    list_.prefetch(list_.next_toward_front(tail));
  }

  /// The id at the back (the next victim but for pins), and the next one toward the front of
  /// `id`: for a store's walk that starts loading its next victims' records (a hint).
  std::uint32_t back() const { return list_.back(); }
  std::uint32_t toward_front(std::uint32_t id) const { return list_.next_toward_front(id); }
  /// Starts loading `id`'s node (a hint; `id` may be IdList::kNil).
  void prefetch_node(std::uint32_t id) const { list_.prefetch(id); }

  void on_insert(const CacheEntry& e, SimTime) override {
    insert(static_cast<std::uint32_t>(e.id));
  }
  void on_hit(const CacheEntry& e, SimTime) override { hit(static_cast<std::uint32_t>(e.id)); }
  void on_remove(FactId id) override { remove(static_cast<std::uint32_t>(id)); }
  void on_evict(FactId id, const EvictionContext& ctx) override {
    evict(static_cast<std::uint32_t>(id), ctx);
  }
  /// Order alone decides: with slot ids a million-fact run keeps its list in the cache.
  bool slot_ids() const override { return true; }
  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    const auto i = pick(ctx);
    if (i == IdList::kNil) return std::nullopt;
    return i;
  }

 private:
  IdList list_;
  PinnedTail pinned_tail_;
};

}  // namespace inferscale
