// FIFO: evict the fact inserted longest ago; hits change nothing.
#include "policies/id_list.h"
#include "policies/pinned_tail.h"
#include "policies/registry.h"

namespace inferscale {
namespace {

class Fifo final : public EvictionPolicy {
 public:
  void on_insert(const CacheEntry& e, SimTime) override { list_.push_front(e.id); }
  void on_hit(const CacheEntry&, SimTime) override {}
  void on_remove(FactId id) override {
    pinned_tail_.unlink(list_, id);
    list_.erase(id);
  }
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

INFERSCALE_REGISTER_EVICTION(fifo, "first in, first out", {},
                             [](const PolicyArgs&) { return std::make_unique<Fifo>(); });

}  // namespace inferscale
