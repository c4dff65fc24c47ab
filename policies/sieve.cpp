// SIEVE: a FIFO queue with one "visited" bit per fact and a hand that walks from the oldest fact
// toward the newest (wrapping around), clearing visited bits and evicting the first unvisited
// fact. Unlike CLOCK, survivors stay in place and new facts enter at the newest end.
// victim() computes where the hand would stop without moving it; on_evict() moves it. The hand
// passes pinned facts like any other (clearing their bit) but never stops on one.
// Layout for speed: the queue is an array of fact ids, oldest first, that the hand reads in
// order; a fact that leaves it leaves a hole, skipped, and the array is compacted when holes
// outnumber the live entries. The visited bits are a bitmap by fact id (1M facts: 128 KiB), so a
// hit touches no per-fact cache line. The hand is the index of the fact it is at, or 0 for the
// oldest one. After a first removal each fact's index is recorded (4 bytes per fact), so that a
// removal finds its entry in O(1).
#include <algorithm>

#include "policies/id_list.h"
#include "policies/registry.h"

namespace inferscale {
namespace {

class Sieve final : public EvictionPolicy {
 public:
  void on_insert(const CacheEntry& e, SimTime) override {
    grow_to(visited_, e.id >> 6);
    set_visited(e.id, false);
    if (positions_) {
      grow_to(pos_, e.id);
      pos_[e.id] = static_cast<std::uint32_t>(queue_.size());
    }
    queue_.push_back(static_cast<std::uint32_t>(e.id));
    ++live_;
  }
  void on_hit(const CacheEntry& e, SimTime) override { set_visited(e.id, true); }
  void on_remove(FactId id) override {
    if (!positions_) record_positions();
    leave(pos_[id]);
  }

  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    if (live_ == 0) return std::nullopt;
    const std::size_t n = queue_.size();
    for (std::size_t k = 0, p = hand_; k < n; ++k, p = p + 1 == n ? 0 : p + 1) {
      const std::uint32_t id = queue_[p];
      if (id != kHole && !visited(id) && !ctx.pinned(id)) return id;
    }
    // Every unpinned fact was visited: after one turn all bits are clear.
    for (std::size_t k = 0, p = hand_; k < n; ++k, p = p + 1 == n ? 0 : p + 1) {
      const std::uint32_t id = queue_[p];
      if (id != kHole && !ctx.pinned(id)) return id;
    }
    return std::nullopt;
  }

  void on_evict(FactId v, const EvictionContext&) override {
    // The hand walks to the victim (found in the walk, as victim() found it), clearing the bits
    // it passes.
    const std::size_t n = queue_.size();
    const auto vid = static_cast<std::uint32_t>(v);
    std::size_t p = hand_;
    if (visited(v)) {  // the hand went round once: every bit cleared
      std::fill(visited_.begin(), visited_.end(), 0);
      while (queue_[p] != vid) p = p + 1 == n ? 0 : p + 1;
    } else {
      for (; queue_[p] != vid; p = p + 1 == n ? 0 : p + 1) {
        if (queue_[p] != kHole) set_visited(queue_[p], false);
      }
    }
    hand_ = p;
    leave(p);
  }

 private:
  static constexpr std::uint32_t kHole = 0xffffffffu;
  bool visited(FactId id) const { return (visited_[id >> 6] >> (id & 63) & 1) != 0; }
  void set_visited(FactId id, bool on) {
    const std::uint64_t bit = std::uint64_t{1} << (id & 63);
    visited_[id >> 6] = on ? visited_[id >> 6] | bit : visited_[id >> 6] & ~bit;
  }
  /// The fact at index `p` leaves the queue; a hand at it moves to the next newer fact, or to
  /// the oldest when there is none.
  void leave(std::size_t p) {
    queue_[p] = kHole;
    --live_;
    ++holes_;
    if (p == hand_) {
      hand_ = p + 1;
      while (hand_ < queue_.size() && queue_[hand_] == kHole) ++hand_;
      if (hand_ == queue_.size()) hand_ = 0;
    }
    if (holes_ > live_ + 1024) compact();
  }
  void compact() {
    std::size_t out = 0, hand = 0;
    for (std::size_t p = 0; p < queue_.size(); ++p) {
      const std::uint32_t id = queue_[p];
      if (id == kHole) continue;
      if (p == hand_) hand = out;
      if (positions_) pos_[id] = static_cast<std::uint32_t>(out);
      queue_[out++] = id;
    }
    queue_.resize(out);
    hand_ = hand;
    holes_ = 0;
  }
  void record_positions() {
    positions_ = true;
    for (std::size_t p = 0; p < queue_.size(); ++p) {
      if (queue_[p] == kHole) continue;
      grow_to(pos_, queue_[p]);
      pos_[queue_[p]] = static_cast<std::uint32_t>(p);
    }
  }

  std::vector<std::uint32_t> queue_;    // fact ids, oldest first; kHole where one left
  std::vector<std::uint64_t> visited_;  // visited bits by fact id
  std::vector<std::uint32_t> pos_;      // by fact id, if positions_: its index in queue_
  std::size_t hand_ = 0;                // index of the fact at the hand; 0: the oldest
  std::size_t live_ = 0, holes_ = 0;
  bool positions_ = false;  // pos_ is kept (after a first removal)
};

}  // namespace

INFERSCALE_REGISTER_EVICTION(sieve, "SIEVE: FIFO with a visited bit and a hand that sifts in place",
                             {}, [](const PolicyArgs&) { return std::make_unique<Sieve>(); });

}  // namespace inferscale
