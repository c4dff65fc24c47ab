// PinnedTail: a list policy that remembers its pinned tail between victim() calls answers what a
// plain scan answers. Tiers replay the same random accesses, pins and unpins: one view counts no
// unpins (the policy scans from the back every time), the others count them and keep no log, a
// short log, or every unpin (the policy skips what it found pinned and is still pinned).
#include <random>

#include "tests/catch.h"
#include "tests/policies/policy_harness.h"

using namespace inferscale;
using namespace inferscale::test;

namespace {

class CountingView : public TestView {
 public:
  explicit CountingView(std::size_t log_limit) : log_limit_(log_limit) {}
  void unpin(FactId f) {
    pins.erase(f);
    log_.push_back(f);
  }
  std::uint64_t unpin_count() const override { return log_.size(); }
  bool unpinned_since(std::uint64_t count, std::vector<FactId>* out) const override {
    if (log_.size() - count > log_limit_) return false;
    out->insert(out->end(), log_.begin() + static_cast<std::ptrdiff_t>(count), log_.end());
    return true;
  }

 private:
  std::size_t log_limit_;
  std::vector<FactId> log_;
};

}  // namespace

TEST_CASE("lru and fifo with a remembered pinned tail evict what a plain scan evicts") {
  for (const char* policy : {"lru", "fifo"}) {
    for (const std::size_t log_limit : {std::size_t{0}, std::size_t{2}, std::size_t{1} << 20}) {
      INFO(policy << ", unpin log of " << log_limit);
      // 40 facts of 10 bytes, room for 12: the store is often mostly pinned.
      auto counted_tier = make_tier(policy, 120);
      auto plain_tier = make_tier(policy, 120);
      CountingView counted(log_limit);
      TestView plain;
      counted_tier->set_view(&counted);
      plain_tier->set_view(&plain);
      std::mt19937 rng(12345);
      std::vector<FactId> counted_evicted, plain_evicted;
      std::uint64_t evictions = 0, bypasses = 0, all_pinned = 0;
      for (int step = 0; step < 20000; ++step) {
        const auto op = rng() % 10;
        const FactId f = rng() % 40;
        if (op < 6) {  // access: lookup, insert on a miss
          const SimTime now = step;
          const bool hit = counted_tier->lookup(entry(f), now);
          REQUIRE(plain_tier->lookup(entry(f), now) == hit);
          if (!hit) {
            counted_evicted.clear();
            plain_evicted.clear();
            const bool placed = counted_tier->insert(entry(f), now, &counted_evicted);
            REQUIRE(plain_tier->insert(entry(f), now, &plain_evicted) == placed);
            REQUIRE(counted_evicted == plain_evicted);
            evictions += counted_evicted.size();
            if (!placed) ++bypasses;
          }
        } else if (op < 9) {  // pin a resident fact
          if (counted_tier->resident(f)) {
            counted.pins.insert(f);
            plain.pins.insert(f);
          }
        } else if (counted.pins.count(f) != 0) {  // unpin
          counted.unpin(f);
          plain.pins.erase(f);
        }
        if (step % 7 == 0) {  // extra victim() calls change nothing
          EvictionContext a, b;
          a.run = &counted;
          b.run = &plain;
          const auto va = counted_tier->eviction_policy().victim(a);
          REQUIRE(va == plain_tier->eviction_policy().victim(b));
          if (!va) ++all_pinned;
        }
      }
      // The replay exercised the interesting cases.
      CHECK(evictions > 1000);
      CHECK(bypasses > 50);
      CHECK(all_pinned > 20);
    }
  }
}
