// ARC: adaptive replacement. T1 holds facts seen once recently, T2 facts seen at least twice;
// ghosts B1/B2 remember ids evicted from each. A miss found in B1 grows T1's target p, one found
// in B2 shrinks it; evictions take T1's least recently used fact while T1 is above p, else T2's.
// Sizes are bytes (the original counts pages); ghosts are trimmed to |T1|+|B1| <= c and
// |T1|+|T2|+|B1|+|B2| <= 2c. Adaptation happens on the lookup that finds the ghost.
#include <algorithm>

#include "policies/id_list.h"
#include "policies/registry.h"

namespace inferscale {
namespace {

class Arc final : public EvictionPolicy {
 public:
  explicit Arc(std::uint64_t capacity_bytes) : c_(capacity_bytes) {}

  void on_access(const CacheEntry& e, SimTime) override {
    const auto l = lists_.list_of(e.id);
    if (l == kB1) {
      const double ratio = std::max(
          1.0, double(bytes_of_[kB2]) / double(std::max<std::uint64_t>(1, bytes_of_[kB1])));
      p_ = std::min(double(c_), p_ + ratio * double(e.bytes));
    } else if (l == kB2) {
      const double ratio = std::max(
          1.0, double(bytes_of_[kB1]) / double(std::max<std::uint64_t>(1, bytes_of_[kB2])));
      p_ = std::max(0.0, p_ - ratio * double(e.bytes));
    }
  }

  void on_insert(const CacheEntry& e, SimTime) override {
    grow_to(bytes_, e.id);
    const auto l = lists_.list_of(e.id);
    if (l == kB1 || l == kB2) unlink(e.id);
    bytes_[e.id] = e.bytes;
    link(l == kB1 || l == kB2 ? kT2 : kT1, e.id);
    while (bytes_of_[kT1] + bytes_of_[kB1] > c_ && !lists_.empty(kB1)) unlink(lists_.back(kB1));
    while (bytes_of_[kT1] + bytes_of_[kT2] + bytes_of_[kB1] + bytes_of_[kB2] > 2 * c_ &&
           !lists_.empty(kB2)) {
      unlink(lists_.back(kB2));
    }
  }

  void on_hit(const CacheEntry& e, SimTime) override {
    unlink(e.id);
    link(kT2, e.id);
  }

  void on_remove(FactId id) override { unlink(id); }

  void on_evict(FactId id, const EvictionContext&) override {
    const auto l = lists_.list_of(id);
    unlink(id);
    link(l == kT1 ? kB1 : kB2, id);
  }

  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    const bool incoming_in_b2 = ctx.incoming != nullptr && lists_.list_of(ctx.incoming->id) == kB2;
    const double t1 = double(bytes_of_[kT1]);
    const bool t1_first = !lists_.empty(kT1) && (t1 > p_ || (incoming_in_b2 && t1 >= p_));
    for (std::uint32_t l : {t1_first ? kT1 : kT2, t1_first ? kT2 : kT1}) {
      for (auto i = lists_.back(l); i != IdListSet::kNil; i = lists_.next_toward_front(i)) {
        if (!ctx.pinned(i)) return i;
      }
    }
    return std::nullopt;
  }

 private:
  enum : std::uint32_t { kT1 = 0, kT2 = 1, kB1 = 2, kB2 = 3 };
  void link(std::uint32_t l, FactId id) {
    lists_.push_front(l, id);
    bytes_of_[l] += bytes_[id];
  }
  void unlink(FactId id) {
    bytes_of_[lists_.list_of(id)] -= bytes_[id];
    lists_.erase(id);
  }

  std::uint64_t c_;
  double p_ = 0;  // target bytes of T1
  IdListSet lists_{4};
  std::uint64_t bytes_of_[4] = {0, 0, 0, 0};
  std::vector<std::uint64_t> bytes_;
};

}  // namespace

INFERSCALE_REGISTER_EVICTION(arc, "ARC: adaptive balance of recency (T1) and frequency (T2)", {},
                             [](const PolicyArgs& a) {
                               return std::make_unique<Arc>(a.capacity_bytes);
                             });

}  // namespace inferscale
