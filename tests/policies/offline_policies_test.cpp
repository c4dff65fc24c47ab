// The access oracle and the offline policies (Belady, size-aware Belady) on hand-checked traces.
#include "tests/catch.h"
#include "tests/policies/policy_harness.h"

using namespace inferscale;
using namespace inferscale::test;

TEST_CASE("access oracle: positions per fact, next access after a position, cursor") {
  const std::vector<std::vector<FactId>> requests = {{0, 1}, {2}, {0, 0}, {1, 2}, {0}};
  AccessOracle o(requests);
  CHECK(o.fact_count() == 3);
  CHECK(o.request_count() == 5);
  const auto p0 = o.positions(0);
  CHECK(std::vector<std::uint32_t>(p0.begin(), p0.end()) == std::vector<std::uint32_t>{0, 2, 4});
  CHECK(o.next_after(0, -1) == 0);
  CHECK(o.next_after(0, 0) == 2);
  CHECK(o.next_after(0, 3) == 4);
  CHECK(o.next_after(0, 4) == kNever);
  CHECK(o.next_after(7, 0) == kNever);
  AccessCursor c(o);
  c.begin_request(0, requests[0]);
  CHECK(c.next_access(0) == 2);
  CHECK(c.next_access(1) == 3);
  CHECK(c.next_access(2) == 1);  // not named yet: its first request
  c.begin_request(1, requests[1]);
  CHECK(c.next_access(2) == 3);
  c.begin_request(2, requests[2]);
  CHECK(c.next_access(0) == 4);
  c.begin_request(3, requests[3]);
  CHECK(c.next_access(1) == kNever);
}

TEST_CASE("belady keeps what is needed soonest and bypasses what is needed last") {
  // a b c a b c a with room for two: c is needed after a and b each time, so it never enters.
  const auto t = sequence({0, 1, 2, 0, 1, 2, 0});
  AccessOracle o(t.fact_lists());
  const auto opt = replay(t, make_tier("belady", 20), &o);
  CHECK(opt.stats.hits == 3);
  CHECK(opt.stats.rejected == 2);
  CHECK(opt.evicted.empty());
  const auto lru = replay(t, make_tier("lru", 20));
  CHECK(lru.stats.hits == 0);
}

TEST_CASE("belady evicts the fact whose next request is furthest") {
  // 0 1 2 1 2 0 (room for two): at 2, 0 is next needed at 5, 1 at 3 and 2 itself at 4: 0 goes
  // and 2 enters. At 5 nothing is needed again, so 0 is bypassed.
  const auto t = sequence({0, 1, 2, 1, 2, 0});
  AccessOracle o(t.fact_lists());
  const auto opt = replay(t, make_tier("belady", 20), &o);
  CHECK(opt.evicted == std::vector<FactId>{0});
  CHECK(opt.stats.hits == 2);  // 1 at 3, 2 at 4
  CHECK(opt.stats.rejected == 1);
}

TEST_CASE("belady_size weighs the distance to the next request by size") {
  // Facts: 0 and 2 are 10 bytes, 1 is 30; capacity 40. Requests 0 1 2 2 1 0.
  SmallTrace t;
  t.facts = {TraceFact{10, 0, 1}, TraceFact{30, 0, 1}, TraceFact{10, 0, 1}};
  for (FactId f : {0, 1, 2, 2, 1, 0}) t.requests.push_back(TraceRequest{{f}, 0, 0});
  AccessOracle o(t.fact_lists());
  // At 2: Belady evicts 0 (next at 5, further than 1's 4). Size-aware: 0 scores 3 x 10 = 30,
  // 1 scores 2 x 30 = 60, so 1 goes.
  const auto opt = replay(t, make_tier("belady", 40), &o);
  CHECK(opt.evicted == std::vector<FactId>{0});
  const auto sized = replay(t, make_tier("belady_size", 40), &o);
  REQUIRE_FALSE(sized.evicted.empty());
  CHECK(sized.evicted[0] == 1);
}

TEST_CASE("an offline policy without the run's oracle fails clearly") {
  auto tier = make_tier("belady", 20);
  CHECK_THROWS_WITH(tier->insert(entry(0), 0, nullptr), Catch::Matchers::Contains("oracle"));
}
