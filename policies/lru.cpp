// LRU: evict the least recently used fact.
#include "policies/id_list.h"
#include "policies/pinned_tail.h"
#include "policies/registry.h"

namespace inferscale {
namespace {

class Lru final : public EvictionPolicy {
 public:
  void on_insert(const CacheEntry& e, SimTime) override { list_.push_front(e.id); }
  void on_hit(const CacheEntry& e, SimTime) override {
    pinned_tail_.unlink(list_, e.id);
    list_.move_to_front(e.id);
  }
  void on_remove(FactId id) override {
    pinned_tail_.unlink(list_, id);
    list_.erase(id);
  }
  /// The next victim is most likely the new tail: its records (through the view) and its
  /// neighbour's node, which its own eviction writes, start loading while the run places the
  /// fact this eviction made room for.
  void on_evict(FactId id, const EvictionContext& ctx) override {
    on_remove(id);
    const std::uint32_t tail = list_.back();
    if (tail == IdList::kNil) return;
    if (ctx.run != nullptr) ctx.run->prefetch(tail);
    list_.prefetch(list_.next_toward_front(tail));
  }
  /// Order alone decides: with slot ids a million-fact run keeps its list in the cache.
  bool slot_ids() const override { return true; }
  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    const auto i = pinned_tail_.first_unpinned(list_, ctx);
    if (i == IdList::kNil) return std::nullopt;
    return i;
  }

 private:
  IdList list_;
  PinnedTail pinned_tail_;
};

}  // namespace

INFERSCALE_REGISTER_EVICTION(lru, "least recently used", {},
                             [](const PolicyArgs&) { return std::make_unique<Lru>(); });

}  // namespace inferscale
