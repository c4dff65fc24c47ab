// random: evict a uniformly random unpinned fact (a floor for the other policies). The random
// stream advances only on an eviction, so victim() is repeatable.
#include "policies/id_list.h"
#include "policies/registry.h"

namespace inferscale {
namespace {

class RandomEviction final : public EvictionPolicy {
 public:
  explicit RandomEviction(std::uint64_t seed) : state_(seed) { draw_ = next(); }

  void on_insert(const CacheEntry& e, SimTime) override {
    grow_to(index_, e.id);
    index_[e.id] = static_cast<std::uint32_t>(members_.size());
    members_.push_back(static_cast<std::uint32_t>(e.id));
  }
  void on_hit(const CacheEntry&, SimTime) override {}
  void on_remove(FactId id) override {
    const std::uint32_t i = index_[id];
    members_[i] = members_.back();
    index_[members_[i]] = i;
    members_.pop_back();
  }
  void on_evict(FactId id, const EvictionContext&) override {
    on_remove(id);
    draw_ = next();
  }

  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    const std::size_t n = members_.size();
    if (n == 0) return std::nullopt;
    const std::size_t start = draw_ % n;
    for (std::size_t k = 0; k < n; ++k) {  // pinned: take the next one along
      const std::uint32_t id = members_[(start + k) % n];
      if (!ctx.pinned(id)) return id;
    }
    return std::nullopt;
  }

 private:
  std::uint64_t next() {  // splitmix64
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  std::uint64_t state_, draw_;
  std::vector<std::uint32_t> members_;
  std::vector<std::uint32_t> index_;
};

}  // namespace

INFERSCALE_REGISTER_EVICTION(random, "uniformly random unpinned fact (a floor)", {},
                             [](const PolicyArgs& a) {
                               return std::make_unique<RandomEviction>(a.seed);
                             });

}  // namespace inferscale
