// w_tinylfu: W-TinyLFU, composed of an LRU window (`window_fraction` of the capacity), a TinyLFU
// frequency sketch (policies/frequency_sketch.h, fed by every lookup) and an SLRU main area
// (probation + protected). New facts enter the window; while main has room, the window's
// overflow moves there. Once the tier is full, a fact that would push the window over its share
// makes the window's least recently used fact (the candidate) compete with main's victim: the
// one the sketch counts more often stays, and a winning candidate moves to main's probation.
// victim() names the loser; on_evict() (same context) moves the winner. A pinned candidate cannot
// lose (it is not evictable) but may still move.
#include "policies/frequency_sketch.h"
#include "policies/id_list.h"
#include "policies/registry.h"

namespace inferscale {
namespace {

class WTinyLfu final : public EvictionPolicy {
 public:
  WTinyLfu(std::uint64_t capacity_bytes, double window_fraction, double protected_fraction,
           std::size_t sketch_width)
      : window_target_(static_cast<std::uint64_t>(window_fraction * capacity_bytes)),
        main_target_(capacity_bytes - window_target_),
        protected_target_(static_cast<std::uint64_t>(protected_fraction * main_target_)),
        auto_width_(sketch_width == 0),
        sketch_(auto_width_ ? 1024 : sketch_width, 10 * (auto_width_ ? 1024 : sketch_width)) {}

  void on_access(const CacheEntry& e, SimTime) override { sketch_.add(e.id); }

  void on_insert(const CacheEntry& e, SimTime) override {
    grow_to(bytes_, e.id);
    bytes_[e.id] = e.bytes;
    link(kWindow, e.id);
    ++resident_;
    while (bytes_of_[kWindow] > window_target_) {  // fill main while it has room
      const auto c = lists_.back(kWindow);
      if (c == e.id || bytes_of_[kProbation] + bytes_of_[kProtected] + bytes_[c] > main_target_) {
        break;
      }
      unlink(c);
      link(kProbation, c);
    }
    // Auto-sized sketch: about 4 counters per resident fact; growing clears it.
    if (auto_width_ && resident_ * 4 > sketch_.width() * 2) {
      sketch_.reset_size(sketch_.width() * 2, 10 * sketch_.width() * 2);
    }
  }

  void on_hit(const CacheEntry& e, SimTime) override {
    const auto l = lists_.list_of(e.id);
    if (l != kProbation) {
      lists_.move_to_front(l, e.id);
      return;
    }
    unlink(e.id);
    link(kProtected, e.id);
    while (bytes_of_[kProtected] > protected_target_ && lists_.back(kProtected) != e.id) {
      const auto d = lists_.back(kProtected);
      unlink(d);
      link(kProbation, d);
    }
  }

  void on_remove(FactId id) override {
    unlink(id);
    --resident_;
  }

  void on_evict(FactId id, const EvictionContext& ctx) override {
    const bool from_main = lists_.list_of(id) != kWindow;
    on_remove(id);
    if (from_main && window_over(ctx)) {  // the candidate won: it moves to main
      const auto c = lists_.back(kWindow);
      unlink(c);
      link(kProbation, c);
    }
  }

  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    const auto main_victim = first_unpinned({kProbation, kProtected}, ctx);
    if (window_over(ctx)) {
      const auto c = lists_.back(kWindow);
      if (!ctx.pinned(c) &&
          (!main_victim || sketch_.estimate(c) <= sketch_.estimate(*main_victim))) {
        return c;
      }
      if (main_victim) return main_victim;
    } else if (main_victim) {
      return main_victim;
    }
    return first_unpinned({kWindow}, ctx);
  }

 private:
  enum : std::uint32_t { kWindow = 0, kProbation = 1, kProtected = 2 };
  // Would the incoming fact push the window over its share?
  bool window_over(const EvictionContext& ctx) const {
    const std::uint64_t incoming = ctx.incoming != nullptr ? ctx.incoming->bytes : 0;
    return !lists_.empty(kWindow) && bytes_of_[kWindow] + incoming > window_target_;
  }
  std::optional<FactId> first_unpinned(std::initializer_list<std::uint32_t> ls,
                                       const EvictionContext& ctx) const {
    for (auto l : ls) {
      for (auto i = lists_.back(l); i != IdListSet::kNil; i = lists_.next_toward_front(i)) {
        if (!ctx.pinned(i)) return i;
      }
    }
    return std::nullopt;
  }
  void link(std::uint32_t l, FactId id) {
    lists_.push_front(l, id);
    bytes_of_[l] += bytes_[id];
  }
  void unlink(FactId id) {
    bytes_of_[lists_.list_of(id)] -= bytes_[id];
    lists_.erase(id);
  }

  std::uint64_t window_target_, main_target_, protected_target_;
  bool auto_width_;
  FrequencySketch sketch_;
  IdListSet lists_{3};
  std::uint64_t bytes_of_[3] = {0, 0, 0};
  std::vector<std::uint64_t> bytes_;
  std::size_t resident_ = 0;
};

}  // namespace

INFERSCALE_REGISTER_EVICTION(
    w_tinylfu, "W-TinyLFU: LRU window, TinyLFU filter, SLRU main (composed)",
    {ParamInfo{"window_fraction", "0.01", "share of the capacity for the LRU window"},
     ParamInfo{"protected_fraction", "0.8", "share of the main area for its protected segment"},
     ParamInfo{"sketch_width", "0", "counters per sketch row (0: grow with the resident facts)"}},
    [](const PolicyArgs& a) {
      return std::make_unique<WTinyLfu>(
          a.capacity_bytes, a.params.number("window_fraction", 0.01, 0, 0.999),
          a.params.number("protected_fraction", 0.8, 0, 1),
          static_cast<std::size_t>(a.params.integer("sketch_width", 0, 0, 1 << 28)));
    });

}  // namespace inferscale
