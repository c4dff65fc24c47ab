// FIFO: evict the fact inserted longest ago; hits change nothing.
// Layout for speed: the queue is a ring of fact ids, oldest first, so an insertion and an eviction
// touch consecutive memory and no per-fact state. A fact evicted from behind pinned ones leaves a
// hole; a removed fact's entry stays until it reaches the front (removed ids are counted: an id's
// dead entries are its oldest ones). Holes and dead entries are skipped, and the ring is compacted
// when they outnumber the live entries.
#include <unordered_map>

#include "policies/id_ring.h"
#include "policies/registry.h"

namespace inferscale {
namespace {

class Fifo final : public EvictionPolicy {
 public:
  void on_insert(const CacheEntry& e, SimTime) override {
    ring_.push_back(static_cast<std::uint32_t>(e.id));
    ++live_;
  }
  void on_hit(const CacheEntry&, SimTime) override {}
  void on_remove(FactId id) override {
    ++dead_[static_cast<std::uint32_t>(id)];
    ++dead_total_;
    --live_;
    tidy();
  }
  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    const std::uint64_t p = find(ctx);
    if (p == kNone) return std::nullopt;
    return ring_[p];
  }
  void on_evict(FactId v, const EvictionContext& ctx) override {
    std::uint64_t p = find(ctx);  // the answer of victim(ctx), found again
    if (p == kNone || ring_[p] != v) p = live_position(static_cast<std::uint32_t>(v));
    ring_[p] = kHole;
    --live_;
    tidy();
  }

 private:
  static constexpr std::uint32_t kHole = 0xffffffffu;
  static constexpr std::uint64_t kNone = ~std::uint64_t{0};

  /// Position of the oldest live unpinned entry, or kNone. While no fact has been unpinned since
  /// the previous call, the entries it found pinned are skipped (as PinnedTail does for lists).
  std::uint64_t find(const EvictionContext& ctx) const {
    if (dead_total_ != 0) return find_with_dead(ctx);
    const std::uint64_t count = ctx.unpin_count();
    std::uint64_t p = ring_.begin();
    if (count == kUncountedPins || count != unpins_) {
      pinned_end_ = 0;
      unpins_ = count;
    } else if (pinned_end_ > p) {
      p = pinned_end_;
    }
    for (; p != ring_.end(); ++p) {
      const std::uint32_t id = ring_[p];
      if (id == kHole) continue;
      if (!ctx.pinned(id)) return p;
      if (count != kUncountedPins) pinned_end_ = p + 1;
    }
    return kNone;
  }
  /// find() while removed ids' entries are in the ring: the first dead_[id] entries of an id are
  /// dead.
  std::uint64_t find_with_dead(const EvictionContext& ctx) const {
    std::unordered_map<std::uint32_t, std::uint32_t> seen;
    for (std::uint64_t p = ring_.begin(); p != ring_.end(); ++p) {
      const std::uint32_t id = ring_[p];
      if (id == kHole) continue;
      const auto it = dead_.find(id);
      if (it != dead_.end() && seen[id]++ < it->second) continue;
      if (!ctx.pinned(id)) return p;
    }
    return kNone;
  }
  /// Position of the live entry of a listed id.
  std::uint64_t live_position(std::uint32_t id) const {
    const auto it = dead_.find(id);
    std::uint32_t skip = it != dead_.end() ? it->second : 0;
    std::uint64_t p = ring_.begin();
    for (;; ++p) {
      if (ring_[p] == id && skip-- == 0) break;
    }
    return p;
  }
  /// Pops holes and dead entries from the front; compacts the ring when they dominate it.
  void tidy() {
    while (!ring_.empty()) {
      const std::uint32_t id = ring_.front();
      if (id != kHole && !(dead_total_ != 0 && consume_dead(id))) break;
      ring_.pop_front();
    }
    if (ring_.size() > 2 * live_ + 1024) compact();
  }
  /// If `id` has a dead entry, counts one less and returns true (the caller drops that entry).
  bool consume_dead(std::uint32_t id) {
    const auto it = dead_.find(id);
    if (it == dead_.end()) return false;
    if (--it->second == 0) dead_.erase(it);
    --dead_total_;
    return true;
  }
  void compact() {
    IdRing<> kept;
    for (std::uint64_t p = ring_.begin(); p != ring_.end(); ++p) {
      const std::uint32_t id = ring_[p];
      if (id != kHole && !(dead_total_ != 0 && consume_dead(id))) kept.push_back(id);
    }
    ring_ = std::move(kept);
    unpins_ = kUncountedPins;  // positions changed: forget the pinned entries found
  }

  IdRing<> ring_;  // fact ids, oldest at the front; kHole where a fact left from the middle
  std::unordered_map<std::uint32_t, std::uint32_t> dead_;  // removed ids: dead entries per id
  std::size_t dead_total_ = 0;
  std::size_t live_ = 0;
  // Entries in [front, pinned_end_) were all pinned (or dead) when the unpin count was unpins_.
  mutable std::uint64_t pinned_end_ = 0;
  mutable std::uint64_t unpins_ = kUncountedPins;
};

}  // namespace

INFERSCALE_REGISTER_EVICTION(fifo, "first in, first out", {},
                             [](const PolicyArgs&) { return std::make_unique<Fifo>(); });

}  // namespace inferscale
