// S3-FIFO: a small FIFO S (new facts), a main FIFO M with reinsertion, and a ghost FIFO G of ids
// recently evicted from S. A fact leaving S goes to M if it was hit at least `move_threshold`
// times while in S, else to G (and out of the tier); a miss whose id is in G enters M directly.
// M evicts its oldest fact whose hit count (at most 3) is zero, reinserting the others with the
// count decremented. S evicts while it holds at least its target share (or M is empty), and a
// fact needs two hits in S to move: both as in the published algorithm and its authors'
// implementation. `small_trigger: above` and `move_threshold: 1` give this file's earlier
// behaviour (S evicts only when strictly above its target; one hit moves).
//
// victim() computes the would-be victim without moving anything; on_evict() performs the moves.
// Moves never evict, so they apply to pinned facts like any other (a pinned fact is passed, never
// chosen): then on_evict() can replay them without knowing the pins. Passing M once over facts
// that all have a count >= f decrements every count by f and leaves the order unchanged, so M's
// victim is the unpinned fact with the smallest (count, position).
//
// Layout for speed: the queues are rings of (bytes, id) entries, oldest first, so moving and
// evicting touch consecutive memory, and per fact id there is one byte, its state (hit count,
// queue, stale ghost entries; 1M facts: 1 MiB), the only per-fact memory a miss or a hit touches.
// A fact that leaves a queue from the middle leaves a hole, skipped, dropped at the front, and
// compacted away when holes outnumber the live entries. A ghost that comes back leaves its G
// entry in place, stale, and counts it in its state byte: an id's stale entries are its oldest
// ones in G, so trimming G tells them from the state byte it updates anyway. That needs their
// bytes, known while all ghosts had one size. S's victim from behind pinned facts is found by a
// scan of S, as victim() found it. After a first removal or a ghost of another size, each
// entry's ring position is recorded per fact id (low 32 bits, 4 bytes per fact), written on
// every push, so that a removal or a returning ghost finds its entry in O(1).
// Each pop from a queue's front prefetches the slot and the state of entries further on, which
// the next evictions read: the fronts of M and G were written about a whole queue ago. A lookup
// prefetches its fact's state while the tier checks residency.
#include <algorithm>

#include "policies/id_list.h"
#include "policies/id_ring.h"
#include "policies/registry.h"

namespace inferscale {
namespace {

class S3Fifo final : public EvictionPolicy {
 public:
  S3Fifo(std::uint64_t capacity_bytes, double small_fraction, double ghost_fraction,
         int move_threshold, bool strictly_above)
      : small_target_(static_cast<std::uint64_t>(small_fraction * capacity_bytes) +
                      (strictly_above ? 1 : 0)),
        ghost_target_(static_cast<std::uint64_t>(ghost_fraction * capacity_bytes)),
        threshold_(static_cast<std::uint8_t>(move_threshold)) {}

  void on_access(const CacheEntry& e, SimTime) override {
    // A hit updates the state byte, a miss reads it: start the load while the tier checks
    // residency.
    if (e.id < state_.size()) __builtin_prefetch(&state_[e.id], 1);
  }

  void on_insert(const CacheEntry& e, SimTime) override {
    grow_to(state_, e.id, kNoneState);
    if (positions_) grow_to(pos_, e.id);
    const auto id = static_cast<std::uint32_t>(e.id);
    const bool ghost = queue(id) == kGhost || pending_ghost_ == e.id;
    if (queue(id) == kGhost) leave_ghost(id);
    pending_ghost_ = kNoFact;
    push_back(ghost ? kMain : kSmall, Entry{e.bytes, id});
    set_count(id, 0);
  }

  void on_hit(const CacheEntry& e, SimTime) override {
    std::uint8_t& s = state_[e.id];
    if ((s & kCountMask) < 3) ++s;
  }

  void on_remove(FactId id) override {
    const auto i = static_cast<std::uint32_t>(id);
    const std::uint8_t q = queue(i);
    if (q == kNone) return;
    if (!positions_) record_positions();
    if (q == kGhost) {
      leave_ghost(i);
    } else {
      punch(q, i);
    }
    maybe_compact(q);
  }

  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    const Queue& s = q_[kSmall];
    const Queue& mq = q_[kMain];
    // S: facts hit often enough would move to M; the first other unpinned one is the victim.
    std::uint64_t s_bytes = s.bytes;
    std::size_t moved = 0;
    std::uint64_t p = s.ring.begin();
    for (; p != s.ring.end() && (s_bytes >= small_target_ || mq.live + moved == 0); ++p) {
      const Entry& x = s.ring[p];
      if (x.id == kHole) continue;
      if (count(x.id) >= threshold_) {
        s_bytes -= x.bytes;
        ++moved;
      } else if (!ctx.pinned(x.id)) {
        return x.id;
      }
    }
    const std::uint64_t s_stop = p;
    // M, in the order the hand meets it: M oldest to newest, then the facts moved from S
    // (count 0). The first unpinned fact with count 0 wins, else the smallest (count, position).
    std::uint32_t best = kHole;
    std::uint8_t best_count = 0xff;
    for (std::uint64_t j = mq.ring.begin(); j != mq.ring.end(); ++j) {
      const std::uint32_t id = mq.ring[j].id;
      if (id == kHole || ctx.pinned(id)) continue;
      const std::uint8_t c = count(id);
      if (c == 0) return id;
      if (c < best_count) best = id, best_count = c;
    }
    if (moved > 0) {
      for (std::uint64_t j = s.ring.begin(); j != s_stop; ++j) {
        const std::uint32_t id = s.ring[j].id;
        if (id != kHole && count(id) >= threshold_ && !ctx.pinned(id)) return id;
      }
    }
    if (best != kHole) return best;
    // Only pinned facts in M: evict from what S has left, oldest first.
    for (std::uint64_t j = s_stop; j != s.ring.end(); ++j) {
      const std::uint32_t id = s.ring[j].id;
      if (id != kHole && !ctx.pinned(id)) return id;
    }
    return std::nullopt;
  }

  void on_evict(FactId v, const EvictionContext& ctx) override {
    const auto vid = static_cast<std::uint32_t>(v);
    // The incoming fact leaves G now, before G is trimmed below; on_insert sends it to M.
    if (ctx.incoming != nullptr && ctx.incoming->id < state_.size() &&
        queue(static_cast<std::uint32_t>(ctx.incoming->id)) == kGhost) {
      leave_ghost(static_cast<std::uint32_t>(ctx.incoming->id));
      pending_ghost_ = ctx.incoming->id;
    }
    // Replay S: the same moves as victim() computed, up to v if v is S's victim. The facts
    // passed and kept (pinned ones) go back to S's front in their order.
    Queue& s = q_[kSmall];
    Queue& mq = q_[kMain];
    kept_.clear();
    bool v_at_front = false;
    while (!s.ring.empty() && (s.bytes >= small_target_ || mq.live == 0)) {
      const Entry x = s.ring.front();
      if (x.id == kHole) {
        advance(s.ring);
        --s.holes;
        continue;
      }
      if (count(x.id) >= threshold_) {
        pop_front(kSmall);
        push_back(kMain, x);
        set_count(x.id, 0);
      } else if (x.id == vid) {
        v_at_front = true;
        break;
      } else {
        advance(s.ring);
        kept_.push_back(x);
      }
    }
    Entry out{};
    if (v_at_front) out = pop_front(kSmall);
    for (auto it = kept_.rbegin(); it != kept_.rend(); ++it) put_back_small(*it);
    if (v_at_front || queue(vid) == kSmall) {
      // v is S's victim; from behind what the replay left (only pinned facts in M) it leaves
      // S from the middle.
      if (!v_at_front) out = punch(kSmall, vid);
      push_ghost(out);
      Queue& g = q_[kGhost];
      while (g.bytes > ghost_target_ && g.live != 0) {
        const Entry y = g.ring.front();
        advance(g.ring);
        if (y.id == kHole) {
          --g.holes;
          continue;
        }
        std::uint8_t& st = state_[y.id];
        if (st >= kStaleOne) {  // an older entry of a ghost that came back
          st = static_cast<std::uint8_t>(st - kStaleOne);
          --g.holes;
          continue;
        }
        --g.live;
        g.bytes -= y.bytes;
        st = static_cast<std::uint8_t>((st & ~kQueueMask) | kNoneState);
      }
      maybe_compact(kSmall);
      maybe_compact(kGhost);
      return;
    }
    // M: f full turns, then the facts before v are passed once more.
    const std::uint8_t f = count(vid);
    if (f > 0) {
      for (std::uint64_t j = mq.ring.begin(); j != mq.ring.end(); ++j) {
        const std::uint32_t id = mq.ring[j].id;
        if (id == kHole) continue;
        const std::uint8_t c = count(id);
        set_count(id, c > f ? c - f : 0);
      }
    }
    for (;;) {
      const Entry x = mq.ring.front();
      advance(mq.ring);
      if (x.id == kHole) {
        --mq.holes;
        continue;
      }
      if (x.id == vid) {
        --mq.live;
        mq.bytes -= x.bytes;
        set_queue(vid, kNone);
        break;
      }
      // Passed: back to M's end, its count decremented (live entries and bytes unchanged).
      const std::uint8_t c = count(x.id);
      if (c > 0) set_count(x.id, c - 1);
      if (positions_) pos_[x.id] = static_cast<std::uint32_t>(mq.ring.end());
      mq.ring.push_back(x);
    }
  }

 private:
  enum : std::uint8_t { kSmall = 0, kMain = 1, kGhost = 2, kNone = 3 };
  static constexpr std::uint32_t kHole = 0xffffffffu;  // id of an entry whose fact left
  // State byte: hit count in bits 0-1, queue in bits 2-3, stale G entries in bits 4-7.
  static constexpr std::uint8_t kCountMask = 3;
  static constexpr std::uint8_t kQueueMask = 3 << 2;
  static constexpr std::uint8_t kNoneState = kNone << 2;
  static constexpr std::uint8_t kStaleOne = 1 << 4;
  static constexpr std::uint8_t kStaleMax = 15;
  static constexpr std::uint64_t kNoBytes = ~std::uint64_t{0};
  static constexpr std::uint64_t kPrefetchSlots = 32;  // ring entries ahead of a front
  static constexpr std::uint64_t kPrefetchStates = 8;  // state bytes ahead of a front
  struct Entry {
    std::uint64_t bytes;
    std::uint32_t id;
  };
  struct Queue {
    IdRing<Entry> ring;
    std::uint64_t bytes = 0;          // of the live entries
    std::size_t live = 0, holes = 0;  // holes: entries that are not live (G: stale ones too)
  };

  std::uint8_t count(std::uint32_t id) const { return state_[id] & kCountMask; }
  std::uint8_t queue(std::uint32_t id) const { return (state_[id] & kQueueMask) >> 2; }
  std::uint8_t stale(std::uint32_t id) const { return state_[id] >> 4; }
  void set_count(std::uint32_t id, std::uint8_t c) {
    state_[id] = static_cast<std::uint8_t>((state_[id] & ~kCountMask) | c);
  }
  void set_queue(std::uint32_t id, std::uint8_t q) {
    state_[id] = static_cast<std::uint8_t>((state_[id] & ~kQueueMask) | q << 2);
  }
  void push_back(std::uint8_t q, const Entry& x) {
    Queue& r = q_[q];
    if (positions_) pos_[x.id] = static_cast<std::uint32_t>(r.ring.end());
    r.ring.push_back(x);
    ++r.live;
    r.bytes += x.bytes;
    set_queue(x.id, q);
  }
  void push_ghost(const Entry& x) {
    if (!positions_ && x.bytes != ghost_bytes_) {
      if (ghost_bytes_ == kNoBytes) {
        ghost_bytes_ = x.bytes;
      } else {
        record_positions();
      }
    }
    push_back(kGhost, x);
  }
  /// The fact leaves G (it came back, or was removed): its entry stays, stale, or with recorded
  /// positions becomes a hole.
  void leave_ghost(std::uint32_t id) {
    if (positions_) {
      punch(kGhost, id);
      return;
    }
    if (stale(id) == kStaleMax) compact(kGhost);
    Queue& g = q_[kGhost];
    --g.live;
    ++g.holes;
    g.bytes -= ghost_bytes_;
    state_[id] = static_cast<std::uint8_t>(((state_[id] & ~kQueueMask) | kNoneState) + kStaleOne);
  }
  /// Puts back at S's front an entry the replay took from there (still counted in S).
  void put_back_small(const Entry& x) {
    IdRing<Entry>& ring = q_[kSmall].ring;
    ring.push_front(x);
    if (positions_) pos_[x.id] = static_cast<std::uint32_t>(ring.begin());
  }
  /// Pops the live entry at the front of `q` (its fact's queue is left as it was).
  Entry pop_front(std::uint8_t q) {
    Queue& r = q_[q];
    const Entry x = r.ring.front();
    advance(r.ring);
    --r.live;
    r.bytes -= x.bytes;
    return x;
  }
  /// The fact leaves queue `q` from anywhere: its entry becomes a hole. Returns the entry.
  Entry punch(std::uint8_t q, std::uint32_t id) {
    Queue& r = q_[q];
    const std::uint64_t p = position(q, id);
    const Entry x = r.ring[p];
    r.ring[p].id = kHole;
    --r.live;
    ++r.holes;
    r.bytes -= x.bytes;
    set_queue(id, kNone);
    return x;
  }
  /// Where the live entry of `id` is in `q` (S or M, or G with recorded positions).
  std::uint64_t position(std::uint8_t q, std::uint32_t id) const {
    const IdRing<Entry>& ring = q_[q].ring;
    if (positions_) {
      // From the low 32 bits: a ring holds fewer than 2^32 entries.
      return ring.begin() +
             static_cast<std::uint32_t>(pos_[id] - static_cast<std::uint32_t>(ring.begin()));
    }
    std::uint64_t p = ring.begin();
    while (ring[p].id != id) ++p;  // only one entry of S or M that is not a hole has it
    return p;
  }
  /// From now on every entry's position is recorded; G keeps no stale entries.
  void record_positions() {
    positions_ = true;
    pos_.assign(state_.size(), 0);
    for (std::uint8_t q = kSmall; q <= kGhost; ++q) compact(q);
  }
  void maybe_compact(std::uint8_t q) {
    const Queue& r = q_[q];
    if (r.holes > r.live + 1024) compact(q);
  }
  /// Drops the holes of `q` and G's stale entries (an id's oldest ones).
  void compact(std::uint8_t q) {
    Queue& r = q_[q];
    IdRing<Entry> ring;
    for (std::uint64_t p = r.ring.begin(); p != r.ring.end(); ++p) {
      const Entry& x = r.ring[p];
      if (x.id == kHole) continue;
      if (q == kGhost && state_[x.id] >= kStaleOne) {
        state_[x.id] = static_cast<std::uint8_t>(state_[x.id] - kStaleOne);
        continue;
      }
      if (positions_) pos_[x.id] = static_cast<std::uint32_t>(ring.end());
      ring.push_back(x);
    }
    r.ring = std::move(ring);
    r.holes = 0;
  }
  /// Pops the front slot of `ring` and prefetches for the entries coming up to the front: the
  /// slot kPrefetchSlots ahead, and the state of the fact kPrefetchStates ahead (whose slot was
  /// prefetched before). The front of M or G was written about a whole queue ago: both are cold.
  void advance(IdRing<Entry>& ring) {
    ring.pop_front();
    const std::uint64_t b = ring.begin(), n = ring.end() - b;
    if (kPrefetchSlots < n) __builtin_prefetch(&ring[b + kPrefetchSlots]);
    if (kPrefetchStates < n) {
      const std::uint32_t id = ring[b + kPrefetchStates].id;
      if (id != kHole) __builtin_prefetch(&state_[id], 1);
    }
  }

  // S evicts while its bytes are at least small_target_ (the share, +1 for `above`).
  std::uint64_t small_target_, ghost_target_;
  std::uint8_t threshold_;
  Queue q_[3];
  std::vector<std::uint8_t> state_;  // by fact id: hit count (0..3), queue, stale G entries
  std::vector<std::uint32_t> pos_;   // by fact id, if positions_: low 32 bits of its ring position
  std::vector<Entry> kept_;          // scratch of on_evict
  FactId pending_ghost_ = kNoFact;   // taken from G by on_evict, inserted next
  std::uint64_t ghost_bytes_ = kNoBytes;  // the size of every ghost so far
  bool positions_ = false;                // pos_ is kept (after a removal or mixed ghost sizes)
};

}  // namespace

INFERSCALE_REGISTER_EVICTION(
    s3fifo, "S3-FIFO: small FIFO, main FIFO with reinsertion, ghost FIFO of evicted ids",
    {ParamInfo{"small_fraction", "0.1", "share of the capacity for the small FIFO"},
     ParamInfo{"ghost_fraction", "0.9", "ghost ids kept, as bytes they had over the capacity"},
     ParamInfo{"move_threshold", "2", "hits while in the small FIFO that move a fact to main"},
     ParamInfo{"small_trigger", "at_or_above",
               "the small FIFO evicts when at_or_above its share, or only when above it"}},
    [](const PolicyArgs& a) {
      return std::make_unique<S3Fifo>(
          a.capacity_bytes, a.params.number("small_fraction", 0.1, 0.001, 0.9),
          a.params.number("ghost_fraction", 0.9, 0, 10),
          static_cast<int>(a.params.integer("move_threshold", 2, 1, 3)),
          a.params.text("small_trigger", "at_or_above", {"at_or_above", "above"}) == "above");
    });

}  // namespace inferscale
