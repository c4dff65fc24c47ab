// LRU: evict the least recently used fact.
#include "policies/id_list.h"
#include "policies/registry.h"

namespace inferscale {
namespace {

class Lru final : public EvictionPolicy {
 public:
  void on_insert(const CacheEntry& e, SimTime) override { list_.push_front(e.id); }
  void on_hit(const CacheEntry& e, SimTime) override { list_.move_to_front(e.id); }
  void on_remove(FactId id) override { list_.erase(id); }
  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    for (auto i = list_.back(); i != IdList::kNil; i = list_.next_toward_front(i)) {
      if (!ctx.pinned(i)) return i;
    }
    return std::nullopt;
  }

 private:
  IdList list_;
};

}  // namespace

INFERSCALE_REGISTER_EVICTION(lru, "least recently used", {},
                             [](const PolicyArgs&) { return std::make_unique<Lru>(); });

}  // namespace inferscale
