// S3-FIFO: a small FIFO S (new facts), a main FIFO M with reinsertion, and a ghost FIFO G of ids
// recently evicted from S. A fact leaving S goes to M if it was hit at least `move_threshold`
// times while in S, else to G (and out of the tier); a miss whose id is in G enters M directly.
// M evicts its oldest fact whose hit count (at most 3) is zero, reinserting the others with the
// count decremented.
//
// victim() computes the would-be victim without moving anything; on_evict() performs the moves.
// Moves never evict, so they apply to pinned facts like any other (a pinned fact is passed, never
// chosen): then on_evict() can replay them without knowing the pins. Passing M once over facts
// that all have a count >= f decrements every count by f and leaves the order unchanged, so M's
// victim is the unpinned fact with the smallest (count, position).
#include <algorithm>

#include "policies/id_list.h"
#include "policies/registry.h"

namespace inferscale {
namespace {

class S3Fifo final : public EvictionPolicy {
 public:
  S3Fifo(std::uint64_t capacity_bytes, double small_fraction, double ghost_fraction,
         int move_threshold)
      : small_target_(static_cast<std::uint64_t>(small_fraction * capacity_bytes)),
        ghost_target_(static_cast<std::uint64_t>(ghost_fraction * capacity_bytes)),
        threshold_(static_cast<std::uint8_t>(move_threshold)) {}

  void on_insert(const CacheEntry& e, SimTime) override {
    grow_to(bytes_, e.id);
    const bool ghost = q_.list_of(e.id) == kGhost || pending_ghost_ == e.id;
    if (q_.list_of(e.id) == kGhost) unlink(e.id);
    pending_ghost_ = kNoFact;
    bytes_[e.id] = e.bytes;
    link(ghost ? kMain : kSmall, e.id);
    q_.set_mark(static_cast<std::uint32_t>(e.id), 0);
  }

  void on_hit(const CacheEntry& e, SimTime) override {
    const auto i = static_cast<std::uint32_t>(e.id);
    const std::uint8_t count = q_.mark(i);
    if (count < 3) q_.set_mark(i, count + 1);
  }

  void on_remove(FactId id) override { unlink(id); }

  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    // S: facts hit often enough would move to M; the first other unpinned one is the victim.
    std::uint64_t s_bytes = bytes_of_[kSmall];
    std::size_t moved = 0;
    auto i = q_.back(kSmall);
    for (; i != kNil && (s_bytes > small_target_ || q_.size(kMain) + moved == 0);
         i = q_.next_toward_front(i)) {
      if (q_.mark(i) >= threshold_) {
        s_bytes -= bytes_[i];
        ++moved;
      } else if (!ctx.pinned(i)) {
        return i;
      }
    }
    const auto s_stop = i;
    // M, in the order the hand meets it: M oldest to newest, then the facts moved from S
    // (count 0). The first unpinned fact with count 0 wins, else the smallest (count, position).
    std::uint32_t best = kNil;
    std::uint8_t best_count = 0xff;
    for (auto j = q_.back(kMain); j != kNil; j = q_.next_toward_front(j)) {
      if (ctx.pinned(j)) continue;
      const std::uint8_t count = q_.mark(j);
      if (count == 0) return j;
      if (count < best_count) best = j, best_count = count;
    }
    if (moved > 0) {
      for (auto j = q_.back(kSmall); j != s_stop; j = q_.next_toward_front(j)) {
        if (q_.mark(j) >= threshold_ && !ctx.pinned(j)) return j;
      }
    }
    if (best != kNil) return best;
    // Only pinned facts in M: evict from what S has left, oldest first.
    for (auto j = s_stop; j != kNil; j = q_.next_toward_front(j)) {
      if (!ctx.pinned(j)) return j;
    }
    return std::nullopt;
  }

  void on_evict(FactId v, const EvictionContext& ctx) override {
    // The incoming fact leaves G now, before G is trimmed below; on_insert sends it to M.
    if (ctx.incoming != nullptr && q_.list_of(ctx.incoming->id) == kGhost) {
      unlink(ctx.incoming->id);
      pending_ghost_ = ctx.incoming->id;
    }
    // Replay S: the same moves as victim() computed, up to v if v is S's victim.
    for (auto i = q_.back(kSmall);
         i != kNil && (bytes_of_[kSmall] > small_target_ || q_.size(kMain) == 0);) {
      const auto next = q_.next_toward_front(i);
      if (q_.mark(i) >= threshold_) {
        unlink(i);
        link(kMain, i);
        q_.set_mark(i, 0);
      } else if (i == v) {
        break;
      }
      i = next;
    }
    if (q_.list_of(v) == kSmall) {
      unlink(v);
      link(kGhost, v);
      while (bytes_of_[kGhost] > ghost_target_ && !q_.empty(kGhost)) unlink(q_.back(kGhost));
      return;
    }
    // M: f full turns, then the facts before v are passed once more.
    const std::uint8_t f = q_.mark(static_cast<std::uint32_t>(v));
    if (f > 0) {
      for (auto j = q_.back(kMain); j != kNil; j = q_.next_toward_front(j)) {
        const std::uint8_t count = q_.mark(j);
        q_.set_mark(j, count > f ? count - f : 0);
      }
    }
    for (auto j = q_.back(kMain); j != v; j = q_.back(kMain)) {
      const std::uint8_t count = q_.mark(j);
      if (count > 0) q_.set_mark(j, count - 1);
      q_.move_to_front(kMain, j);
    }
    unlink(v);
  }

 private:
  enum : std::uint32_t { kSmall = 0, kMain = 1, kGhost = 2 };
  static constexpr std::uint32_t kNil = IdListSet::kNil;
  void link(std::uint32_t l, FactId id) {
    q_.push_front(l, id);
    bytes_of_[l] += bytes_[id];
  }
  void unlink(FactId id) {
    bytes_of_[q_.list_of(id)] -= bytes_[id];
    q_.erase(id);
  }

  std::uint64_t small_target_, ghost_target_;
  std::uint8_t threshold_;
  IdListSet q_{3};  // mark: hit count, 0..3
  std::vector<std::uint64_t> bytes_;
  std::uint64_t bytes_of_[3] = {0, 0, 0};
  FactId pending_ghost_ = kNoFact;  // taken from G by on_evict, inserted next
};

}  // namespace

INFERSCALE_REGISTER_EVICTION(
    s3fifo, "S3-FIFO: small FIFO, main FIFO with reinsertion, ghost FIFO of evicted ids",
    {ParamInfo{"small_fraction", "0.1", "share of the capacity for the small FIFO"},
     ParamInfo{"ghost_fraction", "0.9", "ghost ids kept, as bytes they had over the capacity"},
     ParamInfo{"move_threshold", "1", "hits while in the small FIFO that move a fact to main"}},
    [](const PolicyArgs& a) {
      return std::make_unique<S3Fifo>(
          a.capacity_bytes, a.params.number("small_fraction", 0.1, 0.001, 0.9),
          a.params.number("ghost_fraction", 0.9, 0, 10),
          static_cast<int>(a.params.integer("move_threshold", 1, 1, 3)));
    });

}  // namespace inferscale
