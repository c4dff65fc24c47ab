// GDSF: Greedy-Dual-Size-Frequency. Each fact has the priority H = L + frequency * cost / bytes,
// where cost is its recompute (encode) time; the fact with the lowest H is evicted and L rises to
// its H, so facts not hit for a while fall behind newly inserted ones (aging without a clock).
// Frequency counts hits since the fact was inserted.
#include <algorithm>

#include "policies/id_heap.h"
#include "policies/id_list.h"
#include "policies/registry.h"

namespace inferscale {
namespace {

class Gdsf final : public EvictionPolicy {
 public:
  explicit Gdsf(bool uniform_cost) : uniform_cost_(uniform_cost) {}

  void on_insert(const CacheEntry& e, SimTime) override {
    grow_to(value_, e.id);
    grow_to(freq_, e.id);
    const double cost = uniform_cost_ ? 1.0 : double(std::max<SimTime>(1, e.recompute_cost_ns));
    value_[e.id] = cost / double(std::max<std::uint64_t>(1, e.bytes));
    freq_[e.id] = 1;
    heap_.set(e.id, Key{l_ + value_[e.id], ++seq_});
  }

  void on_hit(const CacheEntry& e, SimTime) override {
    freq_[e.id] += 1;
    heap_.set(e.id, Key{l_ + double(freq_[e.id]) * value_[e.id], ++seq_});
  }

  void on_remove(FactId id) override { heap_.erase(id); }

  void on_evict(FactId id, const EvictionContext&) override {
    l_ = std::max(l_, heap_.key(id).h);
    heap_.erase(id);
  }

  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    return heap_.first_unpinned([&](FactId id) { return ctx.pinned(id); });
  }

 private:
  struct Key {
    double h;
    std::uint64_t seq;  // ties: the least recently touched first
    bool operator<(const Key& o) const { return h < o.h || (h == o.h && seq < o.seq); }
  };

  bool uniform_cost_;
  double l_ = 0;
  std::uint64_t seq_ = 0;
  std::vector<double> value_;  // cost per byte
  std::vector<std::uint32_t> freq_;
  IdHeap<Key> heap_;
};

}  // namespace

INFERSCALE_REGISTER_EVICTION(
    gdsf, "GDSF: lowest L + frequency * recompute cost / bytes first (size- and cost-aware)",
    {ParamInfo{"cost", "recompute", "recompute: the fact's encode time; uniform: 1 per fact"}},
    [](const PolicyArgs& a) {
      return std::make_unique<Gdsf>(a.params.text("cost", "recompute", {"recompute", "uniform"}) ==
                                    "uniform");
    });

}  // namespace inferscale
