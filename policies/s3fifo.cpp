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
//
// Layout for speed: the queues are rings of (id, bytes, generation) entries, oldest first, so
// moving and evicting touch consecutive memory; hit counts are one byte per fact id (1M facts:
// 1 MiB), the only per-fact memory a hit touches. A fact that leaves a queue other than from its
// front (removed, or a ghost coming back) leaves a dead entry behind: its fact's record names
// another queue or a later generation. Dead entries are skipped (checked only while a queue has
// some), dropped when they reach the front and compacted away when they outnumber the live ones.
#include <algorithm>

#include "policies/id_list.h"
#include "policies/id_ring.h"
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
    grow_to(meta_, e.id);
    grow_to(count_, e.id);
    Meta& m = meta_[e.id];
    const bool ghost = m.queue == kGhost || pending_ghost_ == e.id;
    if (m.queue == kGhost) leave(m);
    pending_ghost_ = kNoFact;
    m.bytes = e.bytes;
    ++m.gen;
    push(ghost ? kMain : kSmall, Entry{e.bytes, static_cast<std::uint32_t>(e.id), m.gen});
    count_[e.id] = 0;
  }

  void on_hit(const CacheEntry& e, SimTime) override {
    std::uint8_t& count = count_[e.id];
    if (count < 3) ++count;
  }

  void on_remove(FactId id) override {
    const std::uint8_t q = meta_[id].queue;
    if (q == kNone) return;
    leave(meta_[id]);
    maybe_compact(q);
  }

  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    const Queue& s = q_[kSmall];
    const Queue& mq = q_[kMain];
    // S: facts hit often enough would move to M; the first other unpinned one is the victim.
    std::uint64_t s_bytes = s.bytes;
    std::size_t moved = 0;
    std::uint64_t p = s.ring.begin();
    for (; p != s.ring.end() && (s_bytes > small_target_ || mq.live + moved == 0); ++p) {
      const Entry& x = s.ring[p];
      if (s.dead != 0 && !live(x, kSmall)) continue;
      if (count_[x.id] >= threshold_) {
        s_bytes -= x.bytes;
        ++moved;
      } else if (!ctx.pinned(x.id)) {
        return x.id;
      }
    }
    const std::uint64_t s_stop = p;
    // M, in the order the hand meets it: M oldest to newest, then the facts moved from S
    // (count 0). The first unpinned fact with count 0 wins, else the smallest (count, position).
    std::uint32_t best = kNil;
    std::uint8_t best_count = 0xff;
    for (std::uint64_t j = mq.ring.begin(); j != mq.ring.end(); ++j) {
      const Entry& x = mq.ring[j];
      if (mq.dead != 0 && !live(x, kMain)) continue;
      if (ctx.pinned(x.id)) continue;
      const std::uint8_t count = count_[x.id];
      if (count == 0) return x.id;
      if (count < best_count) best = x.id, best_count = count;
    }
    if (moved > 0) {
      for (std::uint64_t j = s.ring.begin(); j != s_stop; ++j) {
        const Entry& x = s.ring[j];
        if (s.dead != 0 && !live(x, kSmall)) continue;
        if (count_[x.id] >= threshold_ && !ctx.pinned(x.id)) return x.id;
      }
    }
    if (best != kNil) return best;
    // Only pinned facts in M: evict from what S has left, oldest first.
    for (std::uint64_t j = s_stop; j != s.ring.end(); ++j) {
      const Entry& x = s.ring[j];
      if (s.dead != 0 && !live(x, kSmall)) continue;
      if (!ctx.pinned(x.id)) return x.id;
    }
    return std::nullopt;
  }

  void on_evict(FactId v, const EvictionContext& ctx) override {
    // The incoming fact leaves G now, before G is trimmed below; on_insert sends it to M.
    if (ctx.incoming != nullptr && ctx.incoming->id < meta_.size() &&
        meta_[ctx.incoming->id].queue == kGhost) {
      leave(meta_[ctx.incoming->id]);
      pending_ghost_ = ctx.incoming->id;
    }
    // Replay S: the same moves as victim() computed, up to v if v is S's victim. The facts
    // passed and kept (pinned ones) go back to S's front in their order.
    Queue& s = q_[kSmall];
    Queue& mq = q_[kMain];
    kept_.clear();
    bool v_in_small = false;
    while (!s.ring.empty() && (s.bytes > small_target_ || mq.live == 0)) {
      const Entry x = s.ring.front();
      if (s.dead != 0 && !live(x, kSmall)) {
        s.ring.pop_front();
        --s.dead;
        continue;
      }
      if (count_[x.id] >= threshold_) {
        s.ring.pop_front();
        --s.live;
        s.bytes -= x.bytes;
        meta_[x.id].queue = kMain;
        push(kMain, x);
        count_[x.id] = 0;
      } else if (x.id == v) {
        v_in_small = true;
        break;
      } else {
        s.ring.pop_front();
        kept_.push_back(x);
      }
    }
    if (v_in_small) {
      s.ring.pop_front();
      --s.live;
      s.bytes -= meta_[v].bytes;
    }
    restore_kept();
    if (v_in_small || meta_[v].queue == kSmall) {
      // v is S's victim; from behind the facts the replay left (only pinned ones in M), it
      // leaves S from the middle and its entry stays there, dead.
      if (!v_in_small) leave(meta_[v]);
      const Meta& m = meta_[v];
      push(kGhost, Entry{m.bytes, static_cast<std::uint32_t>(v), m.gen});
      Queue& g = q_[kGhost];
      while (g.bytes > ghost_target_ && g.live != 0) {
        const Entry y = g.ring.front();
        g.ring.pop_front();
        if (g.dead != 0 && !live(y, kGhost)) {
          --g.dead;
          continue;
        }
        --g.live;
        g.bytes -= y.bytes;
        meta_[y.id].queue = kNone;
      }
      maybe_compact(kSmall);
      maybe_compact(kGhost);
      return;
    }
    // M: f full turns, then the facts before v are passed once more.
    const std::uint8_t f = count_[v];
    if (f > 0) {
      for (std::uint64_t j = mq.ring.begin(); j != mq.ring.end(); ++j) {
        const Entry& x = mq.ring[j];
        if (mq.dead != 0 && !live(x, kMain)) continue;
        std::uint8_t& count = count_[x.id];
        count = count > f ? count - f : 0;
      }
    }
    for (;;) {
      const Entry x = mq.ring.front();
      mq.ring.pop_front();
      if (mq.dead != 0 && !live(x, kMain)) {
        --mq.dead;
        continue;
      }
      if (x.id == v) {
        --mq.live;
        mq.bytes -= x.bytes;
        meta_[x.id].queue = kNone;
        break;
      }
      std::uint8_t& count = count_[x.id];
      if (count > 0) --count;
      mq.ring.push_back(x);
    }
  }

 private:
  enum : std::uint8_t { kSmall = 0, kMain = 1, kGhost = 2, kNone = 3 };
  static constexpr std::uint32_t kNil = 0xffffffffu;
  struct Entry {
    std::uint64_t bytes;
    std::uint32_t id;
    std::uint32_t gen;  // the fact's generation when it entered the queues
  };
  struct Meta {  // per fact id
    std::uint64_t bytes = 0;
    std::uint32_t gen = 0;  // counts insertions: tells a returning fact from its dead entries
    std::uint8_t queue = kNone;
  };
  struct Queue {
    IdRing<Entry> ring;
    std::uint64_t bytes = 0;  // of the live entries
    std::size_t live = 0, dead = 0;
  };

  bool live(const Entry& x, std::uint8_t q) const {
    const Meta& m = meta_[x.id];
    return m.queue == q && m.gen == x.gen;
  }
  void push(std::uint8_t q, const Entry& x) {
    q_[q].ring.push_back(x);
    ++q_[q].live;
    q_[q].bytes += x.bytes;
    meta_[x.id].queue = q;
  }
  /// The fact leaves its queue from anywhere: its entry stays there, dead.
  void leave(Meta& m) {
    Queue& q = q_[m.queue];
    --q.live;
    ++q.dead;
    q.bytes -= m.bytes;
    m.queue = kNone;
  }
  void restore_kept() {
    for (auto it = kept_.rbegin(); it != kept_.rend(); ++it) q_[kSmall].ring.push_front(*it);
  }
  void maybe_compact(std::uint8_t q) {
    Queue& x = q_[q];
    if (x.dead <= x.live + 1024) return;
    IdRing<Entry> ring;
    for (std::uint64_t p = x.ring.begin(); p != x.ring.end(); ++p) {
      if (live(x.ring[p], q)) ring.push_back(x.ring[p]);
    }
    x.ring = std::move(ring);
    x.dead = 0;
  }

  std::uint64_t small_target_, ghost_target_;
  std::uint8_t threshold_;
  Queue q_[3];
  std::vector<Meta> meta_;
  std::vector<std::uint8_t> count_;  // hit count, 0..3, by fact id
  std::vector<Entry> kept_;          // scratch of on_evict
  FactId pending_ghost_ = kNoFact;   // taken from G by on_evict, inserted next
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
