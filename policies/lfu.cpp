// LFU: evict the least frequently used fact; ties go to the least recently used. O(1): facts sit
// in frequency buckets (each an LRU list), buckets in a chain of increasing count. With aging,
// every count is halved once the hits since the last halving reach `aging_period` times the
// number of resident facts, so old popularity fades (amortised O(log n / aging_period) per hit).
#include <algorithm>
#include <tuple>
#include <vector>

#include "policies/id_list.h"
#include "policies/registry.h"

namespace inferscale {
namespace {

class Lfu final : public EvictionPolicy {
 public:
  explicit Lfu(double aging_period) : aging_period_(aging_period) {}

  void on_insert(const CacheEntry& e, SimTime) override {
    grow_to(seq_, e.id);
    seq_[e.id] = ++clock_;
    std::uint32_t b = first_;
    if (b == kNone || buckets_[b].count != 1) b = new_bucket(1, kNone, first_);
    lists_.push_front(b, e.id);
    ++resident_;
  }

  void on_hit(const CacheEntry& e, SimTime) override {
    const std::uint32_t b = lists_.list_of(e.id);
    const std::uint64_t c = buckets_[b].count + 1;
    std::uint32_t nb = buckets_[b].next;
    if (nb == kNone || buckets_[nb].count != c) nb = new_bucket(c, b, nb);
    lists_.erase(e.id);
    lists_.push_front(nb, e.id);
    seq_[e.id] = ++clock_;
    if (lists_.empty(b)) free_bucket(b);
    if (aging_period_ > 0 &&
        ++hits_since_aging_ >= aging_period_ * static_cast<double>(resident_)) {
      age();
    }
  }

  void on_remove(FactId id) override {
    const std::uint32_t b = lists_.list_of(id);
    lists_.erase(id);
    if (lists_.empty(b)) free_bucket(b);
    --resident_;
  }

  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    for (std::uint32_t b = first_; b != kNone; b = buckets_[b].next) {
      for (auto i = lists_.back(b); i != IdListSet::kNil; i = lists_.next_toward_front(i)) {
        if (!ctx.pinned(i)) return i;
      }
    }
    return std::nullopt;
  }

 private:
  static constexpr std::uint32_t kNone = 0xffffffffu;
  struct Bucket {
    std::uint64_t count = 0;
    std::uint32_t prev = kNone, next = kNone;
  };

  // A bucket with `count` linked between `prev` and `next` (kNone: chain ends).
  std::uint32_t new_bucket(std::uint64_t count, std::uint32_t prev, std::uint32_t next) {
    std::uint32_t b;
    if (!free_.empty()) {
      b = free_.back();
      free_.pop_back();
    } else {
      b = static_cast<std::uint32_t>(buckets_.size());
      buckets_.emplace_back();
      lists_.resize_lists(buckets_.size());
    }
    buckets_[b] = Bucket{count, prev, next};
    if (prev != kNone)
      buckets_[prev].next = b;
    else
      first_ = b;
    if (next != kNone) buckets_[next].prev = b;
    return b;
  }

  void free_bucket(std::uint32_t b) {
    const Bucket& k = buckets_[b];
    if (k.prev != kNone)
      buckets_[k.prev].next = k.next;
    else
      first_ = k.next;
    if (k.next != kNone) buckets_[k.next].prev = k.prev;
    free_.push_back(b);
  }

  void age() {
    hits_since_aging_ = 0;
    std::vector<std::tuple<std::uint64_t, std::uint64_t, FactId>> all;  // (count, seq, id)
    all.reserve(resident_);
    for (std::uint32_t b = first_; b != kNone; b = buckets_[b].next) {
      const std::uint64_t c = std::max<std::uint64_t>(1, buckets_[b].count / 2);
      for (auto i = lists_.back(b); i != IdListSet::kNil; i = lists_.next_toward_front(i)) {
        all.emplace_back(c, seq_[i], i);
      }
    }
    std::sort(all.begin(), all.end());
    for (const auto& t : all) lists_.erase(std::get<2>(t));
    buckets_.clear();
    free_.clear();
    first_ = kNone;
    std::uint32_t last = kNone;
    for (const auto& [count, seq, id] : all) {
      if (last == kNone || buckets_[last].count != count) last = new_bucket(count, last, kNone);
      lists_.push_front(last, id);  // ascending seq: the most recent ends at the front
    }
  }

  double aging_period_;
  double hits_since_aging_ = 0;
  std::uint64_t clock_ = 0;
  std::size_t resident_ = 0;
  std::vector<std::uint64_t> seq_;  // by id: order of the last access
  IdListSet lists_;                 // one list per bucket
  std::vector<Bucket> buckets_;
  std::vector<std::uint32_t> free_;
  std::uint32_t first_ = kNone;  // bucket with the lowest count
};

}  // namespace

INFERSCALE_REGISTER_EVICTION(
    lfu, "least frequently used (ties: least recently used), counts halved periodically",
    {ParamInfo{"aging_period", "10",
               "halve every count after this many hits per resident fact (0: never)"}},
    [](const PolicyArgs& a) {
      return std::make_unique<Lfu>(a.params.number("aging_period", 10, 0, 1e9));
    });

}  // namespace inferscale
