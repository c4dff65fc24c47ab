// SLRU: segmented LRU. New facts enter the probationary segment; a hit there promotes the fact
// to the protected segment, whose least recently used facts are demoted back to probation when
// it outgrows `protected_fraction` of the capacity. Evictions take probation's LRU first.
#include "policies/id_list.h"
#include "policies/registry.h"

namespace inferscale {
namespace {

class Slru final : public EvictionPolicy {
 public:
  Slru(std::uint64_t capacity_bytes, double protected_fraction)
      : protected_target_(static_cast<std::uint64_t>(protected_fraction * capacity_bytes)) {}

  void on_insert(const CacheEntry& e, SimTime) override {
    grow_to(bytes_, e.id);
    bytes_[e.id] = e.bytes;
    link(kProbation, e.id);
  }

  void on_hit(const CacheEntry& e, SimTime) override {
    unlink(e.id);
    link(kProtected, e.id);
    while (bytes_of_[kProtected] > protected_target_ && lists_.back(kProtected) != e.id) {
      const auto d = lists_.back(kProtected);
      unlink(d);
      link(kProbation, d);
    }
  }

  void on_remove(FactId id) override { unlink(id); }

  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    for (std::uint32_t l : {kProbation, kProtected}) {
      for (auto i = lists_.back(l); i != IdListSet::kNil; i = lists_.next_toward_front(i)) {
        if (!ctx.pinned(i)) return i;
      }
    }
    return std::nullopt;
  }

 private:
  enum : std::uint32_t { kProbation = 0, kProtected = 1 };
  void link(std::uint32_t l, FactId id) {
    lists_.push_front(l, id);
    bytes_of_[l] += bytes_[id];
  }
  void unlink(FactId id) {
    bytes_of_[lists_.list_of(id)] -= bytes_[id];
    lists_.erase(id);
  }

  std::uint64_t protected_target_;
  IdListSet lists_{2};
  std::uint64_t bytes_of_[2] = {0, 0};
  std::vector<std::uint64_t> bytes_;
};

}  // namespace

INFERSCALE_REGISTER_EVICTION(slru, "segmented LRU: probationary and protected segments",
                             {ParamInfo{"protected_fraction", "0.8",
                                        "share of the capacity for the protected segment"}},
                             [](const PolicyArgs& a) {
                               return std::make_unique<Slru>(
                                   a.capacity_bytes,
                                   a.params.number("protected_fraction", 0.8, 0.0, 1.0));
                             });

}  // namespace inferscale
