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

  // A lookup that finds the id in G takes it out at once, so that the evictions made for its
  // insertion cannot trim it from G first.
  void on_access(const CacheEntry& e, SimTime) override { take_from_ghost(e.id); }

  void on_insert(const CacheEntry& e, SimTime) override {
    grow_to(freq_, e.id);
    grow_to(bytes_, e.id);
    grow_to(ghost_hit_, e.id);
    take_from_ghost(e.id);
    if (ghost_hit_[e.id] != 0) {
      ghost_hit_[e.id] = 0;
      bytes_[e.id] = e.bytes;
      freq_[e.id] = 0;
      q_.push_front(kMain, e.id);
      main_bytes_ += e.bytes;
      ++main_count_;
    } else {
      bytes_[e.id] = e.bytes;
      freq_[e.id] = 0;
      q_.push_front(kSmall, e.id);
      small_bytes_ += e.bytes;
    }
  }

  void on_hit(const CacheEntry& e, SimTime) override {
    if (freq_[e.id] < 3) ++freq_[e.id];
  }

  void on_remove(FactId id) override {
    if (q_.list_of(id) == kSmall) {
      small_bytes_ -= bytes_[id];
    } else {
      main_bytes_ -= bytes_[id];
      --main_count_;
    }
    q_.erase(id);
  }

  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    // S: facts hit often enough would move to M; the first other unpinned one is the victim.
    std::uint64_t s_bytes = small_bytes_;
    std::size_t moved = 0;
    auto i = q_.back(kSmall);
    for (; i != IdListSet::kNil && (s_bytes > small_target_ || main_count_ + moved == 0);
         i = q_.next_toward_front(i)) {
      if (freq_[i] >= threshold_) {
        s_bytes -= bytes_[i];
        ++moved;
      } else if (!ctx.pinned(i)) {
        return i;
      }
    }
    const auto s_stop = i;
    // M, in the order the hand meets it: M oldest to newest, then the facts moved from S
    // (count 0). The first unpinned fact with count 0 wins, else the smallest (count, position).
    std::uint32_t best = IdListSet::kNil;
    std::uint8_t best_count = 0xff;
    for (auto j = q_.back(kMain); j != IdListSet::kNil; j = q_.next_toward_front(j)) {
      if (ctx.pinned(j)) continue;
      if (freq_[j] == 0) return j;
      if (freq_[j] < best_count) best = j, best_count = freq_[j];
    }
    if (moved > 0) {
      for (auto j = q_.back(kSmall); j != s_stop; j = q_.next_toward_front(j)) {
        if (freq_[j] >= threshold_ && !ctx.pinned(j)) return j;
      }
    }
    if (best != IdListSet::kNil) return best;
    // Only pinned facts in M: evict from what S has left, oldest first.
    for (auto j = s_stop; j != IdListSet::kNil; j = q_.next_toward_front(j)) {
      if (!ctx.pinned(j)) return j;
    }
    return std::nullopt;
  }

  void on_evict(FactId v, const EvictionContext&) override {
    // Replay S: the same moves as victim() computed, up to v if v is S's victim.
    for (auto i = q_.back(kSmall);
         i != IdListSet::kNil && (small_bytes_ > small_target_ || main_count_ == 0);) {
      const auto next = q_.next_toward_front(i);
      if (freq_[i] >= threshold_) {
        q_.erase(i);
        small_bytes_ -= bytes_[i];
        freq_[i] = 0;
        q_.push_front(kMain, i);
        main_bytes_ += bytes_[i];
        ++main_count_;
      } else if (i == v) {
        break;
      }
      i = next;
    }
    if (q_.list_of(v) == kSmall) {
      q_.erase(v);
      small_bytes_ -= bytes_[v];
      q_.push_front(kGhost, v);
      ghost_bytes_ += bytes_[v];
      while (ghost_bytes_ > ghost_target_ && !q_.empty(kGhost)) {
        const auto g = q_.back(kGhost);
        q_.erase(g);
        ghost_bytes_ -= bytes_[g];
      }
      return;
    }
    // M: f full turns, then the facts before v are passed once more.
    const std::uint8_t f = freq_[v];
    if (f > 0) {
      for (auto j = q_.back(kMain); j != IdListSet::kNil; j = q_.next_toward_front(j)) {
        freq_[j] = static_cast<std::uint8_t>(freq_[j] > f ? freq_[j] - f : 0);
      }
    }
    for (auto j = q_.back(kMain); j != v; j = q_.back(kMain)) {
      if (freq_[j] > 0) --freq_[j];
      q_.move_to_front(kMain, j);
    }
    q_.erase(v);
    main_bytes_ -= bytes_[v];
    --main_count_;
  }

 private:
  enum : std::uint32_t { kSmall = 0, kMain = 1, kGhost = 2 };
  void take_from_ghost(FactId id) {
    if (q_.list_of(id) != kGhost) return;
    q_.erase(id);
    ghost_bytes_ -= bytes_[id];
    grow_to(ghost_hit_, id);
    ghost_hit_[id] = 1;
  }

  std::uint64_t small_target_, ghost_target_;
  std::uint8_t threshold_;
  IdListSet q_{3};
  std::vector<std::uint8_t> freq_;
  std::vector<std::uint8_t> ghost_hit_;  // found in G by a lookup, not inserted yet
  std::vector<std::uint64_t> bytes_;
  std::uint64_t small_bytes_ = 0, main_bytes_ = 0, ghost_bytes_ = 0;
  std::size_t main_count_ = 0;
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
