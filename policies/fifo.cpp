// FIFO: evict the fact inserted longest ago; hits change nothing.
#include "policies/id_list.h"
#include "policies/registry.h"

namespace inferscale {
namespace {

class Fifo final : public EvictionPolicy {
 public:
  void on_insert(const CacheEntry& e, SimTime) override { list_.push_front(e.id); }
  void on_hit(const CacheEntry&, SimTime) override {}
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

INFERSCALE_REGISTER_EVICTION(fifo, "first in, first out", {},
                             [](const PolicyArgs&) { return std::make_unique<Fifo>(); });

}  // namespace inferscale
