// PinnedTail: a list policy that remembers its pinned tail between victim() calls answers what a
// plain scan answers. Two tiers replay the same random accesses, pins and unpins; one view counts
// unpins (the policy may skip what it found pinned), the other does not (it scans every time).
#include <random>

#include "tests/catch.h"
#include "tests/policies/policy_harness.h"

using namespace inferscale;
using namespace inferscale::test;

namespace {

class CountingView : public TestView {
 public:
  std::uint64_t unpins = 0;
  std::uint64_t unpin_count() const override { return unpins; }
};

}  // namespace

TEST_CASE("lru and fifo with a counted pinned tail evict what a plain scan evicts") {
  for (const char* policy : {"lru", "fifo"}) {
    INFO(policy);
    // 40 facts of 10 bytes, room for 12: the store is often mostly pinned.
    auto counted_tier = make_tier(policy, 120);
    auto plain_tier = make_tier(policy, 120);
    CountingView counted;
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
      } else if (counted.pins.erase(f) != 0) {  // unpin
        plain.pins.erase(f);
        ++counted.unpins;
      }
      if (step % 7 == 0) {  // extra victim() calls change nothing
        EvictionContext a, b;
        a.run = &counted;
        b.run = &plain;
        const auto va = counted_tier->victim(a);
        REQUIRE(va == plain_tier->victim(b));
        if (!va) ++all_pinned;
      }
    }
    // The replay exercised the interesting cases.
    CHECK(evictions > 1000);
    CHECK(bypasses > 50);
    CHECK(all_pinned > 20);
  }
}
