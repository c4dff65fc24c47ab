// Hand-checked sequences for GDSF, cost_aware, user_lru, random and unbounded.
#include <algorithm>

#include "tests/catch.h"
#include "tests/policies/policy_harness.h"

using namespace inferscale;
using namespace inferscale::test;

TEST_CASE("gdsf evicts the lowest L + frequency * cost / bytes, and L rises") {
  Bench b(make_tier("gdsf", 30));
  b.access(entry(0, 10, 0, 100));        // H = 10
  b.access(entry(1, 10, 0, 300));        // H = 30
  b.access(entry(2, 10, 0, 200));        // H = 20
  b.access(entry(3, 10, 0, 50));         // evicts 0; L = 10; H(3) = 15
  CHECK(b.access(entry(3, 10, 0, 50)));  // H(3) = 10 + 2 * 5 = 20, touched after 2
  b.access(entry(4, 10, 0, 1000));       // 2 and 3 tie at 20: 2 is older; L = 20
  b.access(entry(5, 10, 0, 10));         // 3 (20) before 1 (30) and 4 (120)
  CHECK(b.evicted == std::vector<FactId>{0, 2, 3});
}

TEST_CASE("gdsf evicts a large fact before a small one of the same cost") {
  Bench b(make_tier("gdsf", 30));
  b.access(entry(0, 20, 0, 100));  // 5 per byte
  b.access(entry(1, 10, 0, 100));  // 10 per byte
  b.access(entry(2, 10, 0, 100));
  CHECK(b.evicted == std::vector<FactId>{0});
  Bench uniform(make_tier("gdsf", 30, params({{"cost", "uniform"}})));
  uniform.access(entry(0, 20, 0, 1));  // cost ignored: 1 / 20
  uniform.access(entry(1, 10, 0, 1000000));
  uniform.access(entry(2, 10, 0, 1));
  CHECK(uniform.evicted == std::vector<FactId>{0});
}

TEST_CASE("cost_aware weighs recompute cost per byte against time since last access") {
  Bench b(make_tier("cost_aware", 30, params({{"half_life_ms", "1"}})));
  const SimTime ms = kNsPerMs;
  b.access(entry(0, 10, 0, 100), 0);        // 10 per byte
  b.access(entry(2, 10, 0, 300), 0);        // 30 per byte
  b.access(entry(1, 10, 0, 100), 2 * ms);   // 10 per byte, recent
  b.access(entry(3, 10, 0, 1000), 2 * ms);  // at 2 ms: 0 is 2.5, 1 is 10, 2 is 7.5 -> 0
  b.access(entry(4, 10, 0, 1000), 4 * ms);  // at 4 ms: 1 is 2.5, 2 is 1.9, 3 is 25 -> 2
  CHECK(b.evicted == std::vector<FactId>{0, 2});
}

TEST_CASE("user_lru evicts from the user idle longest, never from a user in flight") {
  Bench b(make_tier("user_lru", 40));
  b.access(entry(0, 10, 1), 1);
  b.access(entry(1, 10, 1), 2);
  b.access(entry(2, 10, 2), 3);
  b.access(entry(3, 10, 2), 4);
  CHECK(b.access(entry(0, 10, 1), 5));  // user 1 active again: user 2 idle longest
  b.access(entry(4, 10, 3), 6);         // user 2's least recent fact: 2 (LRU would take 1)
  CHECK(b.evicted == std::vector<FactId>{2});
  b.view.in_flight = {2};
  b.access(entry(5, 10, 3), 7);  // user 2 in flight: user 1's least recent fact, 1
  CHECK(b.evicted == std::vector<FactId>{2, 1});
  b.view.in_flight = {1, 2, 3};
  CHECK_FALSE(b.access(entry(6, 10, 4), 8));
  CHECK_FALSE(b.tier->resident(6));  // every resident fact belongs to a user in flight
  CHECK(b.evicted.size() == 2);
}

TEST_CASE("random evicts unpinned facts, reproducibly for a seed") {
  auto run = [](std::uint64_t seed) {
    Bench b(make_tier("random", 50, {}, "always", {}, seed));
    for (FactId f = 0; f < 5; ++f) b.access(f);
    b.view.pins = {0, 1, 2, 3};
    b.access(10);
    CHECK(b.evicted == std::vector<FactId>{4});
    b.view.pins.clear();
    for (FactId f = 20; f < 40; ++f) b.access(f);
    return b.evicted;
  };
  const auto a = run(1), again = run(1);
  CHECK(a == again);
  CHECK(a.size() == 21);
}

TEST_CASE("unbounded never evicts, and what does not fit is not inserted") {
  Bench b(make_tier("unbounded", 20));
  b.access(0);
  b.access(1);
  b.access(2);
  CHECK(b.evicted.empty());
  CHECK_FALSE(b.tier->resident(2));
  CHECK(b.tier->stats().rejected == 1);
}
