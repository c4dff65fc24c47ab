// LFU: evict the least frequently used fact; ties go to the least recently used. With
// `aging_accesses` > 0, every that many hits all counts are halved so old popularity fades.
#include <set>
#include <tuple>
#include <vector>

#include "policies/registry.h"

namespace inferscale {
namespace {

class Lfu final : public EvictionPolicy {
 public:
  explicit Lfu(std::int64_t aging_accesses) : aging_accesses_(aging_accesses) {}

  void on_insert(const CacheEntry& e, SimTime) override {
    grow(e.id);
    key_[e.id] = Key{1, ++clock_, e.id};
    order_.insert(key_[e.id]);
  }
  void on_hit(const CacheEntry& e, SimTime) override {
    order_.erase(key_[e.id]);
    key_[e.id].count += 1;
    key_[e.id].seq = ++clock_;
    order_.insert(key_[e.id]);
    if (aging_accesses_ > 0 && ++hits_since_aging_ >= aging_accesses_) age();
  }
  void on_remove(FactId id) override { order_.erase(key_[id]); }
  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    for (const auto& k : order_) {
      if (!ctx.pinned(k.id)) return k.id;
    }
    return std::nullopt;
  }

 private:
  struct Key {
    std::uint64_t count, seq;
    FactId id;
    bool operator<(const Key& o) const {
      return std::tie(count, seq, id) < std::tie(o.count, o.seq, o.id);
    }
  };
  void grow(FactId id) {
    if (id >= key_.size()) key_.resize(std::max<std::size_t>(id + 1, key_.size() * 2));
  }
  void age() {
    hits_since_aging_ = 0;
    std::set<Key> aged;
    for (auto k : order_) {
      k.count = std::max<std::uint64_t>(1, k.count / 2);
      key_[k.id] = k;
      aged.insert(k);
    }
    order_.swap(aged);
  }

  std::int64_t aging_accesses_;
  std::int64_t hits_since_aging_ = 0;
  std::uint64_t clock_ = 0;
  std::vector<Key> key_;
  std::set<Key> order_;
};

}  // namespace

INFERSCALE_REGISTER_EVICTION(
    lfu, "least frequently used (ties: least recently used), optional aging",
    {ParamInfo{"aging_accesses", "0", "halve all counts every this many hits (0: never)"}},
    [](const PolicyArgs& a) {
      return std::make_unique<Lfu>(a.params.integer("aging_accesses", 0, 0, 1'000'000'000'000));
    });

}  // namespace inferscale
