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
