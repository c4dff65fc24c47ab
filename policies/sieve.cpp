// SIEVE: a FIFO queue with one "visited" bit per fact and a hand that walks from the oldest fact
// toward the newest (wrapping around), clearing visited bits and evicting the first unvisited
// fact. Unlike CLOCK, survivors stay in place and new facts enter at the newest end.
// victim() computes where the hand would stop without moving it; on_evict() moves it. The hand
// passes pinned facts like any other (clearing their bit) but never stops on one.
#include "policies/id_list.h"
#include "policies/registry.h"

namespace inferscale {
namespace {

class Sieve final : public EvictionPolicy {
 public:
  void on_insert(const CacheEntry& e, SimTime) override { queue_.push_front(e.id); }
  void on_hit(const CacheEntry& e, SimTime) override { queue_.set_mark(e.id, 1); }
  void on_remove(FactId id) override {
    if (hand_ == id) hand_ = queue_.next_toward_front(hand_);
    queue_.erase(id);
  }

  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    if (queue_.empty()) return std::nullopt;
    const std::uint32_t start = hand_ != kNil ? hand_ : queue_.back();
    std::uint32_t i = start;
    do {
      if (queue_.mark(i) == 0 && !ctx.pinned(i)) return i;
      i = step(i);
    } while (i != start);
    // Every unpinned fact was visited: after one turn all bits are clear.
    do {
      if (!ctx.pinned(i)) return i;
      i = step(i);
    } while (i != start);
    return std::nullopt;
  }

  void on_evict(FactId v, const EvictionContext&) override {
    if (queue_.mark(v) != 0) {  // the hand went round once: every bit cleared
      for (auto i = queue_.back(); i != kNil; i = queue_.next_toward_front(i))
        queue_.set_mark(i, 0);
    } else {
      for (auto i = hand_ != kNil ? hand_ : queue_.back(); i != v; i = step(i)) {
        queue_.set_mark(i, 0);
      }
    }
    hand_ = queue_.next_toward_front(static_cast<std::uint32_t>(v));
    queue_.erase(v);
  }

 private:
  static constexpr std::uint32_t kNil = MarkedIdList::kNil;
  // The hand's next position: toward the newest fact, then around to the oldest.
  std::uint32_t step(std::uint32_t i) const {
    const std::uint32_t n = queue_.next_toward_front(i);
    return n != kNil ? n : queue_.back();
  }

  MarkedIdList queue_;         // front: newest; mark: the visited bit
  std::uint32_t hand_ = kNil;  // kNil: at the oldest fact
};

}  // namespace

INFERSCALE_REGISTER_EVICTION(sieve, "SIEVE: FIFO with a visited bit and a hand that sifts in place",
                             {}, [](const PolicyArgs&) { return std::make_unique<Sieve>(); });

}  // namespace inferscale
