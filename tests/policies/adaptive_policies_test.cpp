// Hand-checked sequences for LFU, ARC, 2Q, SLRU and W-TinyLFU. Every fact is 10 bytes.
#include "tests/catch.h"
#include "tests/policies/policy_harness.h"

using namespace inferscale;
using namespace inferscale::test;

TEST_CASE("lfu evicts the least frequently used, least recently used on ties") {
  Bench b(make_tier("lfu", 30, params({{"aging_period", "0"}})));
  for (FactId f : {0, 1, 2}) b.access(f);
  for (FactId f : {0, 0, 1}) CHECK(b.access(f));  // counts 0:3 1:2 2:1
  b.access(3);                                    // 2
  CHECK(b.access(3));
  CHECK(b.access(3));  // 3:3
  b.access(4);         // 1 (count 2)
  b.access(5);         // 4 (count 1)
  CHECK(b.evicted == std::vector<FactId>{2, 1, 4});
  b.access(6);  // 5 (count 1) before the count-3 facts
  CHECK(b.evicted.back() == 5);
  CHECK(b.tier->resident(0));
  CHECK(b.tier->resident(3));
}

TEST_CASE("lfu aging lets recent popularity beat old popularity") {
  // A (0) gets 8 accesses, then B (1) 6 recent ones: without aging A has 8 and B 6. With counts
  // halved after every 4 hits per resident fact, A was halved twice (after its 4th hit with one
  // resident, and after B's 5th hit with two) and B once: A 2, B 3.
  for (const char* aging : {"0", "4"}) {
    Bench b(make_tier("lfu", 20, params({{"aging_period", aging}})));
    b.access(0);
    for (int i = 0; i < 7; ++i) b.access(0);
    b.access(1);
    for (int i = 0; i < 5; ++i) b.access(1);
    b.access(2);
    REQUIRE(b.evicted.size() == 1);
    CHECK(b.evicted[0] == (std::string(aging) == "0" ? 1u : 0u));
  }
}

TEST_CASE("arc adapts its recency target on ghost hits") {
  Bench b(make_tier("arc", 30));
  for (FactId f : {0, 1, 2}) b.access(f);
  CHECK(b.access(0));  // T2 = [0], T1 = [1, 2]
  b.access(3);         // p = 0: T1's LRU 1 -> B1
  b.access(1);         // B1 hit: p = 10; T1 (20 bytes) > p: 2 -> B1; 1 enters T2
  b.access(4);         // T1 = [3] is not above p: T2's LRU 0 -> B2
  b.access(0);         // B2 hit: p = 0; T1's LRU 3
  CHECK(b.evicted == std::vector<FactId>{1, 2, 0, 3});
  CHECK(b.tier->resident(0));
  CHECK(b.tier->resident(1));
  CHECK(b.tier->resident(4));
}

TEST_CASE("2q: new facts pass through A1in, ids seen again after leaving it go to Am") {
  // Capacity 4 facts, A1in 1 fact, A1out 2 ids.
  Bench b(make_tier("two_q", 40, params({{"in_fraction", "0.25"}, {"out_fraction", "0.5"}})));
  for (FactId f : {0, 1, 2, 3}) b.access(f);
  b.access(4);  // 0 -> A1out
  CHECK(b.access(1));
  b.access(5);  // 1 (a hit in A1in changes nothing) -> A1out
  b.access(0);  // A1out hit: 2 makes room, 0 enters Am
  b.access(6);  // 3
  CHECK(b.access(0));
  b.access(7);  // 4
  b.access(3);  // A1out: 5 makes room, 3 -> Am
  b.access(4);  // A1out: 6 makes room, 4 -> Am; A1in = [7]
  b.access(8);  // A1in within its share: Am's LRU, 0
  CHECK(b.evicted == std::vector<FactId>{0, 1, 2, 3, 4, 5, 6, 0});
}

TEST_CASE("slru protects facts hit once and demotes the protected overflow") {
  Bench b(make_tier("slru", 40, params({{"protected_fraction", "0.5"}})));
  for (FactId f : {0, 1, 2, 3}) b.access(f);
  for (FactId f : {1, 2, 3}) CHECK(b.access(f));  // protected [3, 2]; 1 demoted
  b.access(4);                                    // probation LRU 0
  b.access(5);                                    // 1
  CHECK(b.access(4));                             // 4 protected, 2 demoted
  b.access(6);                                    // probation: 5 older than 2
  CHECK(b.evicted == std::vector<FactId>{0, 1, 5});
}

TEST_CASE("w_tinylfu keeps frequent facts against a stream of one-hit facts") {
  // Capacity 10 facts, a window of 1; 0..8 are looked up three times, 9.. once.
  Bench b(make_tier("w_tinylfu", 100, params({{"window_fraction", "0.1"}})));
  for (FactId f = 0; f < 10; ++f) b.access(f);
  CHECK(b.evicted.empty());
  for (int round = 0; round < 2; ++round) {
    for (FactId f = 0; f < 9; ++f) CHECK(b.access(f));
  }
  for (FactId f : {10, 11, 12}) b.access(f);
  CHECK(b.evicted == std::vector<FactId>{9, 10, 11});
  for (FactId f = 0; f < 9; ++f) CHECK(b.tier->resident(f));
  SECTION("a newcomer looked up often wins against main's victim") {
    for (int i = 0; i < 4; ++i) b.tier->lookup(entry(20), 0);
    b.access(20);  // evicts the window's candidate 12
    CHECK(b.evicted.back() == 12);
    b.access(21);  // candidate 20 (5 lookups) beats main's victim (3): 20 moves to main
    CHECK(b.tier->resident(20));
    CHECK(b.tier->resident(21));
    CHECK(b.evicted.size() == 5);
    CHECK(b.evicted.back() < 9);
  }
  SECTION("LRU, for contrast, loses the frequent facts") {
    Bench lru(make_tier("lru", 100));
    for (FactId f = 0; f < 10; ++f) lru.access(f);
    for (int round = 0; round < 2; ++round) {
      for (FactId f = 0; f < 9; ++f) lru.access(f);
    }
    for (FactId f : {10, 11, 12}) lru.access(f);
    CHECK(lru.evicted == std::vector<FactId>{9, 0, 1});
  }
}
