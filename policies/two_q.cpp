// 2Q (full version): new facts enter the FIFO A1in; a fact evicted from A1in leaves its id in
// the ghost FIFO A1out; a miss found in A1out enters the LRU Am. A1in is evicted while it holds
// more than `in_fraction` of the capacity, else Am.
#include "policies/id_list.h"
#include "policies/registry.h"

namespace inferscale {
namespace {

class TwoQ final : public EvictionPolicy {
 public:
  TwoQ(std::uint64_t capacity_bytes, double in_fraction, double out_fraction)
      : in_target_(static_cast<std::uint64_t>(in_fraction * capacity_bytes)),
        out_target_(static_cast<std::uint64_t>(out_fraction * capacity_bytes)) {}

  // A lookup that finds the id in A1out takes it out at once, so that the evictions made for its
  // insertion cannot trim it from A1out first.
  void on_access(const CacheEntry& e, SimTime) override { take_from_ghost(e.id); }

  void on_insert(const CacheEntry& e, SimTime) override {
    grow_to(bytes_, e.id);
    grow_to(ghost_hit_, e.id);
    take_from_ghost(e.id);
    bytes_[e.id] = e.bytes;
    link(ghost_hit_[e.id] != 0 ? kAm : kIn, e.id);
    ghost_hit_[e.id] = 0;
  }

  void on_hit(const CacheEntry& e, SimTime) override {
    if (lists_.list_of(e.id) == kAm) lists_.move_to_front(kAm, e.id);
  }

  void on_remove(FactId id) override { unlink(id); }

  void on_evict(FactId id, const EvictionContext&) override {
    const bool from_in = lists_.list_of(id) == kIn;
    unlink(id);
    if (!from_in) return;
    link(kOut, id);
    while (bytes_of_[kOut] > out_target_ && !lists_.empty(kOut)) unlink(lists_.back(kOut));
  }

  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    const bool in_first = bytes_of_[kIn] > in_target_ || lists_.empty(kAm);
    for (std::uint32_t l : {in_first ? kIn : kAm, in_first ? kAm : kIn}) {
      for (auto i = lists_.back(l); i != IdListSet::kNil; i = lists_.next_toward_front(i)) {
        if (!ctx.pinned(i)) return i;
      }
    }
    return std::nullopt;
  }

 private:
  enum : std::uint32_t { kIn = 0, kAm = 1, kOut = 2 };
  void take_from_ghost(FactId id) {
    if (lists_.list_of(id) != kOut) return;
    unlink(id);
    grow_to(ghost_hit_, id);
    ghost_hit_[id] = 1;
  }
  void link(std::uint32_t l, FactId id) {
    lists_.push_front(l, id);
    bytes_of_[l] += bytes_[id];
  }
  void unlink(FactId id) {
    bytes_of_[lists_.list_of(id)] -= bytes_[id];
    lists_.erase(id);
  }

  std::uint64_t in_target_, out_target_;
  IdListSet lists_{3};
  std::uint64_t bytes_of_[3] = {0, 0, 0};
  std::vector<std::uint64_t> bytes_;
  std::vector<std::uint8_t> ghost_hit_;  // found in A1out by a lookup, not inserted yet
};

}  // namespace

INFERSCALE_REGISTER_EVICTION(
    two_q, "2Q: FIFO for new facts, LRU for facts seen again after leaving it (ghost ids)",
    {ParamInfo{"in_fraction", "0.25", "share of the capacity for the A1in FIFO"},
     ParamInfo{"out_fraction", "0.5", "ghost ids kept, as bytes they had over the capacity"}},
    [](const PolicyArgs& a) {
      return std::make_unique<TwoQ>(a.capacity_bytes,
                                    a.params.number("in_fraction", 0.25, 0.001, 0.999),
                                    a.params.number("out_fraction", 0.5, 0, 10));
    });

}  // namespace inferscale
