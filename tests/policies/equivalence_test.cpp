// The queue policies (fifo, lru, clock, s3fifo) against reference models: the previous
// implementations of fifo, clock and s3fifo on intrusive linked lists, kept here verbatim (lru is
// unchanged and is its own reference). Random sequences of lookups,
// inserts with mixed sizes, pins (with a counted unpin), removals and extra victim() calls must
// give the same hits, victims and victim() answers.
#include <algorithm>
#include <random>

#include "policies/id_list.h"
#include "policies/pinned_tail.h"
#include "tests/catch.h"
#include "tests/policies/policy_harness.h"

using namespace inferscale;
using namespace inferscale::test;

namespace {

class RefFifo final : public EvictionPolicy {
 public:
  void on_insert(const CacheEntry& e, SimTime) override { list_.push_front(e.id); }
  void on_hit(const CacheEntry&, SimTime) override {}
  void on_remove(FactId id) override {
    pinned_tail_.unlink(list_, id);
    list_.erase(id);
  }
  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    const auto i = pinned_tail_.first_unpinned(list_, ctx);
    if (i == IdList::kNil) return std::nullopt;
    return i;
  }

 private:
  IdList list_;
  PinnedTail pinned_tail_;
};

class RefClock final : public EvictionPolicy {
 public:
  void on_insert(const CacheEntry& e, SimTime) override {
    std::uint32_t frame;
    if (!free_.empty()) {
      frame = free_.back();
      free_.pop_back();
    } else {
      frame = static_cast<std::uint32_t>(frames_.size());
      frames_.push_back(kEmpty);
    }
    frames_[frame] = static_cast<std::uint32_t>(e.id);
    grow_to(frame_of_, e.id);
    frame_of_[e.id] = frame;
    grow_to(ref_, e.id >> 6);
    set_ref(e.id, false);
    ++count_;
  }
  void on_hit(const CacheEntry& e, SimTime) override { set_ref(e.id, true); }
  void on_remove(FactId id) override { free_frame(frame_of_[id]); }

  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    const std::size_t n = frames_.size();
    if (count_ == 0) return std::nullopt;
    for (std::size_t k = 0, f = hand_; k < n; ++k, f = f + 1 == n ? 0 : f + 1) {
      const std::uint32_t id = frames_[f];
      if (id != kEmpty && !ref(id) && !ctx.pinned(id)) return id;
    }
    // Every unpinned fact has its bit set: after one turn all bits are clear, and the hand
    // stops at the first unpinned fact.
    for (std::size_t k = 0, f = hand_; k < n; ++k, f = f + 1 == n ? 0 : f + 1) {
      const std::uint32_t id = frames_[f];
      if (id != kEmpty && !ctx.pinned(id)) return id;
    }
    return std::nullopt;
  }

  void on_evict(FactId v, const EvictionContext&) override {
    const std::size_t n = frames_.size();
    const std::uint32_t target = frame_of_[v];
    if (ref(v)) {  // the hand went round once: every bit cleared
      std::fill(ref_.begin(), ref_.end(), 0);
    } else {
      for (std::size_t f = hand_; f != target; f = f + 1 == n ? 0 : f + 1) {
        if (frames_[f] != kEmpty) set_ref(frames_[f], false);
      }
    }
    hand_ = target + 1 == n ? 0 : target + 1;
    free_frame(target);
  }

 private:
  static constexpr std::uint32_t kEmpty = 0xffffffffu;
  bool ref(FactId id) const { return (ref_[id >> 6] >> (id & 63) & 1) != 0; }
  void set_ref(FactId id, bool on) {
    const std::uint64_t bit = std::uint64_t{1} << (id & 63);
    ref_[id >> 6] = on ? ref_[id >> 6] | bit : ref_[id >> 6] & ~bit;
  }
  void free_frame(std::uint32_t frame) {
    frames_[frame] = kEmpty;
    free_.push_back(frame);
    --count_;
  }

  std::vector<std::uint32_t> frames_;    // fact id per frame, kEmpty if free
  std::vector<std::uint32_t> free_;      // free frames, the last freed on top
  std::vector<std::uint32_t> frame_of_;  // by fact id
  std::vector<std::uint64_t> ref_;       // reference bits by fact id
  std::size_t hand_ = 0;
  std::size_t count_ = 0;
};

class RefS3Fifo final : public EvictionPolicy {
 public:
  RefS3Fifo(std::uint64_t capacity_bytes, double small_fraction, double ghost_fraction,
            int move_threshold, bool strictly_above)
      : small_target_(static_cast<std::uint64_t>(small_fraction * capacity_bytes)),
        strictly_above_(strictly_above),
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
    for (; i != kNil && (over(s_bytes) || q_.size(kMain) + moved == 0);
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
         i != kNil && (over(bytes_of_[kSmall]) || q_.size(kMain) == 0);) {
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

  /// Whether S, holding `bytes`, evicts (published: at or above its share).
  bool over(std::uint64_t bytes) const {
    return strictly_above_ ? bytes > small_target_ : bytes >= small_target_;
  }
  std::uint64_t small_target_;
  bool strictly_above_;
  std::uint64_t ghost_target_;
  std::uint8_t threshold_;
  IdListSet q_{3};  // mark: hit count, 0..3
  std::vector<std::uint64_t> bytes_;
  std::uint64_t bytes_of_[3] = {0, 0, 0};
  FactId pending_ghost_ = kNoFact;  // taken from G by on_evict, inserted next
};

/// Pins that count the times one dropped (RunView::unpin_count), so PinnedTail-like skips run.
class CountingView : public TestView {
 public:
  std::uint64_t unpins = 0;
  std::uint64_t unpin_count() const override { return unpins; }
};

std::unique_ptr<EvictionPolicy> reference(const std::string& name, std::uint64_t capacity,
                                          const Params& p) {
  if (name == "fifo") return std::make_unique<RefFifo>();
  // LRU's code did not change (only the tier's did, which both sides share): its reference is
  // the policy itself, so its cases only check that two tiers fed the same sequence agree.
  if (name == "lru") return PolicyRegistry::make_eviction("lru", PolicyArgs{p, capacity, 0}, "lru");
  if (name == "clock") return std::make_unique<RefClock>();
  return std::make_unique<RefS3Fifo>(capacity, p.number("small_fraction", 0.1, 0.001, 0.9),
                                     p.number("ghost_fraction", 0.9, 0, 10),
                                     static_cast<int>(p.integer("move_threshold", 2, 1, 3)),
                                     p.text("small_trigger", "at_or_above") == "above");
}

void compare(const std::string& name, const Params& p, std::uint64_t seed, bool mixed_sizes,
             bool pins, bool removals) {
  const std::uint64_t capacity = 400;
  const std::size_t facts = 300;
  PolicyArgs args{p, capacity, seed};
  StoreTier a("gpu", capacity, PolicyRegistry::make_eviction(name, args, "eviction"), nullptr,
              name);
  StoreTier b("gpu", capacity, reference(name, capacity, p), nullptr, "reference");
  CountingView view;
  a.set_view(&view);
  b.set_view(&view);
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> bytes(facts);
  for (auto& x : bytes) x = mixed_sizes ? 1 + rng() % 20 : 10;
  std::vector<FactId> ev_a, ev_b;
  for (int step = 0; step < 20000; ++step) {
    const double u = double(rng() >> 11) * 0x1.0p-53;
    const auto id = static_cast<FactId>(double(facts) * u * u);
    CacheEntry e = entry(id, bytes[id]);
    if (mixed_sizes && rng() % 50 == 0) e.bytes = 1 + rng() % 30;  // a fact that changed size
    const auto now = static_cast<SimTime>(step);
    const bool hit = a.lookup(e, now);
    REQUIRE(hit == b.lookup(e, now));
    if (!hit) {
      const bool in = a.insert(e, now, &ev_a);
      REQUIRE(in == b.insert(e, now, &ev_b));
      REQUIRE(ev_a == ev_b);
      REQUIRE(a.used_bytes() == b.used_bytes());
    }
    if (pins) {
      if (rng() % 4 == 0 && (a.resident(id) || rng() % 2 == 0)) view.pins.insert(id);
      if (!view.pins.empty() && rng() % 5 == 0) {
        auto it = view.pins.begin();
        std::advance(it, static_cast<long>(rng() % view.pins.size()));
        view.pins.erase(it);
        ++view.unpins;
      }
      if (rng() % 500 == 0) {
        view.pins.clear();
        ++view.unpins;
      }
    }
    if (removals && rng() % 15 == 0) {
      const auto r = static_cast<FactId>(rng() % facts);
      if (a.resident(r) && !view.pins.count(r)) {
        a.remove(r);
        b.remove(r);
      }
    }
    if (rng() % 7 == 0) {
      EvictionContext ctx;
      ctx.now = now;
      ctx.run = &view;
      ctx.bytes_needed = 1;
      REQUIRE(a.victim(ctx) == b.victim(ctx));
    }
  }
  CHECK(a.stats().hits == b.stats().hits);
  CHECK(a.stats().evictions == b.stats().evictions);
}

}  // namespace

TEST_CASE("queue policies decide as their linked-list reference models") {
  for (const char* name : {"fifo", "lru", "clock", "s3fifo"}) {
    for (std::uint64_t seed = 1; seed <= 6; ++seed) {
      const bool mixed = seed % 2 == 0, pins = seed % 3 != 0, removals = seed >= 3;
      INFO(name << " seed " << seed << " mixed " << mixed << " pins " << pins << " removals "
                << removals);
      compare(name, Params{}, seed, mixed, pins, removals);
    }
  }
  for (std::uint64_t seed = 7; seed <= 9; ++seed) {
    INFO("s3fifo with parameters, seed " << seed);
    compare("s3fifo",
            params({{"small_fraction", "0.3"},
                    {"ghost_fraction", "0.2"},
                    {"move_threshold", std::to_string(1 + seed % 3).c_str()},
                    {"small_trigger", seed % 2 == 0 ? "above" : "at_or_above"}}),
            seed, true, true, true);
  }
}
