// Hand-checked sequences for the queue policies: FIFO, LRU, CLOCK, SIEVE, S3-FIFO. Every fact is
// 10 bytes; a capacity of 30 holds three.
#include "tests/catch.h"
#include "tests/policies/policy_harness.h"

using namespace inferscale;
using namespace inferscale::test;

TEST_CASE("fifo evicts in insertion order whatever the hits") {
  Bench b(make_tier("fifo", 30));
  for (FactId f : {0, 1, 2}) b.access(f);
  CHECK(b.access(0));
  b.access(3);
  b.access(4);
  CHECK(b.evicted == std::vector<FactId>{0, 1});
}

TEST_CASE("lru evicts the least recently used") {
  Bench b(make_tier("lru", 30));
  for (FactId f : {0, 1, 2}) b.access(f);
  CHECK(b.access(0));
  b.access(3);
  b.access(4);
  CHECK(b.evicted == std::vector<FactId>{1, 2});
}

TEST_CASE("lru and fifo skip pinned facts") {
  for (const char* p : {"lru", "fifo"}) {
    Bench b(make_tier(p, 30));
    for (FactId f : {0, 1, 2}) b.access(f);
    b.view.pins = {0, 1};
    b.access(3);
    CHECK(b.evicted == std::vector<FactId>{2});
  }
}

TEST_CASE("clock gives hit facts a second chance") {
  Bench b(make_tier("clock", 30));
  for (FactId f : {0, 1, 2}) b.access(f);
  CHECK(b.access(0));
  CHECK(b.access(1));
  b.access(3);  // hand: 0 (bit set, cleared), 1 (cleared), 2 evicted; order now 0, 1, 3
  CHECK(b.evicted == std::vector<FactId>{2});
  b.access(4);  // 0's bit was cleared
  CHECK(b.access(4));
  b.access(5);  // 1
  CHECK(b.evicted == std::vector<FactId>{2, 0, 1});
}

TEST_CASE("clock with every bit set goes round once and evicts the oldest") {
  Bench b(make_tier("clock", 30));
  for (FactId f : {0, 1, 2}) b.access(f);
  for (FactId f : {0, 1, 2}) CHECK(b.access(f));
  b.access(3);
  b.access(4);  // all bits were cleared by the first turn
  CHECK(b.evicted == std::vector<FactId>{0, 1});
}

TEST_CASE("clock's victim() moves no hand: repeated calls agree, the eviction follows them") {
  Bench b(make_tier("clock", 30));
  for (FactId f : {0, 1, 2}) b.access(f);
  b.access(0);
  EvictionContext ctx;
  ctx.run = &b.view;
  const auto v1 = b.tier->victim(ctx);
  const auto v2 = b.tier->victim(ctx);
  REQUIRE(v1);
  CHECK(*v1 == 1);
  CHECK(v1 == v2);
  b.access(3);
  CHECK(b.evicted == std::vector<FactId>{1});
}

TEST_CASE("sieve's hand sifts in place and remembers where it stopped") {
  Bench b(make_tier("sieve", 30));
  for (FactId f : {0, 1, 2}) b.access(f);
  CHECK(b.access(0));
  b.access(3);  // hand at 0: visited, cleared; 1 evicted; hand -> 2
  b.access(4);  // 2 evicted; hand -> 3
  CHECK(b.access(3));
  b.access(5);  // 3 visited, cleared; 4 evicted; hand wraps to the oldest
  b.access(6);  // 0 (cleared by the first sweep)
  CHECK(b.evicted == std::vector<FactId>{1, 2, 4, 0});
}

TEST_CASE("sieve skips a pinned fact without stopping on it") {
  Bench b(make_tier("sieve", 30));
  for (FactId f : {0, 1, 2}) b.access(f);
  b.view.pins = {0};
  b.access(3);
  CHECK(b.evicted == std::vector<FactId>{1});
}

TEST_CASE("s3fifo: one-hit facts leave through the small queue, ghosts return to main") {
  // Capacity 3 facts; the small queue holds 1 (34 %), the ghost 2 ids (27 bytes). The earlier
  // variant: one hit moves a fact to M, S evicts only when strictly above its share.
  Bench b(make_tier("s3fifo", 30,
                    params({{"small_fraction", "0.34"},
                            {"ghost_fraction", "0.9"},
                            {"move_threshold", "1"},
                            {"small_trigger", "above"}})));
  for (FactId f : {0, 1, 2}) b.access(f);
  CHECK(b.access(0));
  CHECK(b.access(1));
  b.access(3);  // S over: 0 and 1 were hit -> M (count reset); M's first count-0 fact is 0
  CHECK(b.evicted == std::vector<FactId>{0});
  CHECK(b.access(1));  // 1 in M, count 1
  b.access(4);         // S = [2, 3]: 2 never hit -> ghost
  b.access(5);         // 3 -> ghost
  CHECK(b.evicted == std::vector<FactId>{0, 2, 3});
  b.access(2);  // ghost hit: 4 leaves S for room, 2 enters M
  CHECK(b.evicted == std::vector<FactId>{0, 2, 3, 4});
  b.access(6);  // S = [5] is within its share: M evicts; 1 (count 1) is passed, 2 goes
  CHECK(b.evicted == std::vector<FactId>{0, 2, 3, 4, 2});
  CHECK(b.tier->resident(1));
  CHECK(b.tier->resident(5));
  CHECK(b.tier->resident(6));
}

TEST_CASE("s3fifo: defaults follow the published algorithm (two hits move, S evicts at its share)") {
  // The same sequence as above with the defaults: move_threshold 2, small_trigger at_or_above.
  Bench b(make_tier("s3fifo", 30, params({{"small_fraction", "0.34"}, {"ghost_fraction", "0.9"}})));
  for (FactId f : {0, 1, 2}) b.access(f);
  CHECK(b.access(0));
  CHECK(b.access(1));
  b.access(3);  // S over its share: 0 was hit once (below 2) -> the victim, to G
  CHECK(b.evicted == std::vector<FactId>{0});
  CHECK(b.access(1));  // 1 in S, count 2
  b.access(4);         // S = [1, 2, 3]: 1 -> M; 2 never hit -> G
  b.access(5);         // S = [3, 4]: 3 -> G (G keeps 2 ids: 0 goes)
  CHECK(b.evicted == std::vector<FactId>{0, 2, 3});
  b.access(2);  // ghost hit: 4 leaves S for room, 2 enters M
  CHECK(b.evicted == std::vector<FactId>{0, 2, 3, 4});
  b.access(6);  // S = [5] holds exactly its share: S evicts (the earlier variant evicted from M)
  CHECK(b.evicted == std::vector<FactId>{0, 2, 3, 4, 5});
  CHECK(b.tier->resident(1));
  CHECK(b.tier->resident(2));
  CHECK(b.tier->resident(6));
  CHECK_FALSE(b.tier->resident(5));

  // One hit in S is not enough to move a fact (the earlier variant moved 0 and evicted 1).
  Bench c(make_tier("s3fifo", 30, params({{"small_fraction", "0.34"}})));
  for (FactId f : {0, 1, 2}) c.access(f);
  CHECK(c.access(0));
  c.access(3);
  CHECK(c.evicted == std::vector<FactId>{0});
}
