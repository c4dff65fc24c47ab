// CLOCK: one reference bit per fact, set on a hit; the hand passes facts with the bit set
// (clearing it) and evicts the first without. Kept as a FIFO with reinsertion (a passed fact goes
// to the front), which makes the same decisions as a circular buffer with a hand.
// victim() computes where the hand would stop without moving it; on_evict() moves it. The hand
// passes pinned facts like any other (clearing their bit) but never stops on one.
#include "policies/id_list.h"
#include "policies/registry.h"

namespace inferscale {
namespace {

class Clock final : public EvictionPolicy {
 public:
  void on_insert(const CacheEntry& e, SimTime) override { queue_.push_front(e.id); }
  void on_hit(const CacheEntry& e, SimTime) override { queue_.set_mark(e.id, 1); }
  void on_remove(FactId id) override { queue_.erase(id); }

  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    for (auto i = queue_.back(); i != MarkedIdList::kNil; i = queue_.next_toward_front(i)) {
      if (queue_.mark(i) == 0 && !ctx.pinned(i)) return i;
    }
    // Every unpinned fact has its bit set: after one turn all bits are clear, and the hand
    // stops at the first unpinned fact.
    for (auto i = queue_.back(); i != MarkedIdList::kNil; i = queue_.next_toward_front(i)) {
      if (!ctx.pinned(i)) return i;
    }
    return std::nullopt;
  }

  void on_evict(FactId v, const EvictionContext&) override {
    if (queue_.mark(v) != 0) {  // the hand went round once: every bit cleared, order unchanged
      for (auto i = queue_.back(); i != MarkedIdList::kNil; i = queue_.next_toward_front(i)) {
        queue_.set_mark(i, 0);
      }
    }
    for (auto i = queue_.back(); i != v; i = queue_.back()) {
      queue_.set_mark(i, 0);
      queue_.move_to_front(i);
    }
    queue_.erase(v);
  }

 private:
  MarkedIdList queue_;  // back: where the hand points; mark: the reference bit
};

}  // namespace

INFERSCALE_REGISTER_EVICTION(clock, "CLOCK (second chance): one reference bit per fact", {},
                             [](const PolicyArgs&) { return std::make_unique<Clock>(); });

}  // namespace inferscale
