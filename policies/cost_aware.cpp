// cost_aware: value = recompute cost per byte, halved every `half_life_ms` since the fact's last
// access; the lowest value is evicted. All values decay at the same rate, so the order of two
// facts never changes with time: the key log2(cost / bytes) + last_access / half_life gives the
// same order, and a heap keeps it in O(log n) per access.
#include <algorithm>
#include <cmath>

#include "policies/id_heap.h"
#include "policies/id_list.h"
#include "policies/registry.h"

namespace inferscale {
namespace {

class CostAware final : public EvictionPolicy {
 public:
  explicit CostAware(double half_life_ns) : half_life_ns_(half_life_ns) {}

  void on_insert(const CacheEntry& e, SimTime now) override {
    grow_to(log_value_, e.id);
    log_value_[e.id] = std::log2(double(std::max<SimTime>(1, e.recompute_cost_ns))) -
                       std::log2(double(std::max<std::uint64_t>(1, e.bytes)));
    touch(e.id, now);
  }
  void on_hit(const CacheEntry& e, SimTime now) override { touch(e.id, now); }
  void on_remove(FactId id) override { heap_.erase(id); }

  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    return heap_.first_unpinned([&](FactId id) { return ctx.pinned(id); });
  }

 private:
  void touch(FactId id, SimTime now) {
    heap_.set(id, log_value_[id] + double(now) / half_life_ns_);
  }

  double half_life_ns_;
  std::vector<double> log_value_;  // log2(cost per byte)
  IdHeap<double> heap_;            // ties: the smaller id first
};

}  // namespace

INFERSCALE_REGISTER_EVICTION(
    cost_aware, "lowest recompute cost per byte first, decayed by the time since last access",
    {ParamInfo{"half_life_ms", "1000", "time without access that halves a fact's value"}},
    [](const PolicyArgs& a) {
      return std::make_unique<CostAware>(a.params.number("half_life_ms", 1000, 1e-6, 1e12) *
                                         double(kNsPerMs));
    });

}  // namespace inferscale
