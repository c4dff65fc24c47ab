#include "sim/store_tier.h"

#include <set>

#include "policies/registry.h"
#include "tests/catch.h"
#include "tests/sim/forwarding_lru.h"

using namespace inferscale;

namespace {

class Pins : public RunView {
 public:
  std::set<FactId> pinned_ids;
  bool pinned(FactId id) const override { return pinned_ids.count(id) != 0; }
  bool user_in_flight(UserId) const override { return false; }
  SimTime user_last_active(UserId) const override { return kNever; }
  std::int64_t next_access(FactId) const override { return kNever; }
  std::int64_t position() const override { return 0; }
  FactId fact_id_bound() const override { return 1000; }
};

StoreTier make_tier(const std::string& policy, std::uint64_t capacity) {
  PolicyArgs args;
  return StoreTier("gpu", capacity, PolicyRegistry::make_eviction(policy, args, "test"),
                   PolicyRegistry::make_admission("always", args, "test"), policy);
}

CacheEntry entry(FactId id, std::uint64_t bytes = 10) {
  CacheEntry e;
  e.id = id;
  e.bytes = bytes;
  return e;
}

}  // namespace

TEST_CASE("LRU tier evicts the least recently used unpinned fact") {
  auto tier = make_tier("lru", 30);
  Pins pins;
  tier.set_view(&pins);
  std::vector<FactId> evicted;
  for (FactId id : {0, 1, 2}) REQUIRE(tier.insert(entry(id), id, &evicted));
  CHECK(evicted.empty());
  CHECK(tier.lookup(entry(0), 5));  // order now (LRU first): 1, 2, 0
  pins.pinned_ids = {1};
  REQUIRE(tier.insert(entry(3), 6, &evicted));
  CHECK(evicted == std::vector<FactId>{2});
  CHECK(tier.resident(1));
  CHECK_FALSE(tier.resident(2));
  CHECK(tier.used_bytes() == 30);
  CHECK(tier.stats().hits == 1);
}

TEST_CASE("a tier whose residents are all pinned rejects inserts and never overflows") {
  auto tier = make_tier("fifo", 20);
  Pins pins;
  tier.set_view(&pins);
  std::vector<FactId> evicted;
  REQUIRE(tier.insert(entry(0), 0, &evicted));
  REQUIRE(tier.insert(entry(1), 0, &evicted));
  pins.pinned_ids = {0, 1};
  CHECK_FALSE(tier.insert(entry(2), 1, &evicted));
  CHECK(tier.used_bytes() == 20);
  CHECK_FALSE(tier.insert(entry(3, 21), 1, &evicted));  // larger than the tier
}

TEST_CASE("a policy returning a pinned victim is stopped with a clear error") {
  class Bad : public EvictionPolicy {
   public:
    void on_insert(const CacheEntry&, SimTime) override {}
    void on_hit(const CacheEntry&, SimTime) override {}
    void on_remove(FactId) override {}
    std::optional<FactId> victim(const EvictionContext&) const override { return 0; }
  };
  StoreTier tier("gpu", 10, std::make_unique<Bad>(), nullptr, "bad");
  Pins pins;
  tier.set_view(&pins);
  std::vector<FactId> evicted;
  REQUIRE(tier.insert(entry(0), 0, &evicted));
  pins.pinned_ids = {0};
  CHECK_THROWS_WITH(tier.insert(entry(1), 1, &evicted),
                    Catch::Matchers::Contains("pinned by a running request"));
  CHECK(tier.resident(0));
}

TEST_CASE("fact bytes stay exact as the distinct sizes outgrow 1- and 2-byte codes") {
  FactBytes b;
  const std::size_t n = 200'000;
  b.resize(n);
  // Fact i has size f(i, round); each round sets every fact, with more distinct sizes.
  const auto size_of = [](std::size_t i, int round) -> std::uint64_t {
    if (round == 0) return 10;                                   // one size
    if (round == 1) return 1 + i % 200;                          // fits 1-byte codes
    if (round == 2) return (std::uint64_t{1} << 33) + i % 1000;  // 2-byte codes
    return 7 + i;                                                // 200k sizes: raw bytes
  };
  for (int round = 0; round < 4; ++round) {
    for (std::size_t i = 0; i < n; ++i) b.set(i, size_of(i, round));
    bool exact = true;
    for (std::size_t i = 0; i < n; ++i) exact = exact && b.get(i) == size_of(i, round);
    INFO("round " << round);
    CHECK(exact);
  }
}

TEST_CASE("a tier's used bytes stay exact with many distinct fact sizes") {
  auto tier = make_tier("fifo", 5'000'000);
  std::uint64_t expected = 0;
  std::vector<FactId> evicted;
  std::vector<std::uint64_t> size(100'000);
  for (FactId id = 0; id < size.size(); ++id) {
    size[id] = 1 + id % 70'000;  // 70k distinct sizes
    const auto e = entry(id, size[id]);
    if (!tier.lookup(e, 0)) tier.insert(e, 0, &evicted);
  }
  for (FactId id = 0; id < size.size(); ++id) {
    if (tier.resident(id)) expected += size[id];
  }
  CHECK(tier.used_bytes() == expected);
  CHECK(!evicted.empty());
}

TEST_CASE("a tier told of pin changes decides what an untold tier decides") {
  // Two tiers replay the same accesses, pins and unpins; one is told of every pin change (and
  // skips the victim search when none of its facts is unpinned), the other asks its policy each
  // time. 60 facts of 10 bytes, room for 15: the store is often entirely pinned.
  for (const char* policy : {"lru", "fifo", "sieve", "s3fifo", "slru", "gdsf"}) {
    INFO(policy);
    auto told = make_tier(policy, 150);
    auto untold = make_tier(policy, 150);
    Pins pins;
    told.set_view(&pins, true);
    untold.set_view(&pins);
    std::uint64_t state = 12345;
    auto next = [&state] {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      return state >> 33;
    };
    std::vector<FactId> told_evicted, untold_evicted;
    std::uint64_t evictions = 0, rejected_all_pinned = 0;
    for (int step = 0; step < 30000; ++step) {
      const auto op = next() % 10;
      const FactId f = next() % 60;
      if (op < 6) {
        const bool hit = told.lookup(entry(f), step);
        REQUIRE(untold.lookup(entry(f), step) == hit);
        if (hit) continue;
        told_evicted.clear();
        untold_evicted.clear();
        const bool placed = told.insert(entry(f), step, &told_evicted);
        REQUIRE(untold.insert(entry(f), step, &untold_evicted) == placed);
        REQUIRE(told_evicted == untold_evicted);
        evictions += told_evicted.size();
        if (!placed && told_evicted.empty()) ++rejected_all_pinned;
      } else if (op < 9) {
        if (told.resident(f) && pins.pinned_ids.insert(f).second) told.on_pinned(f);
      } else if (pins.pinned_ids.erase(f) != 0) {
        told.on_unpinned(f);
      }
    }
    CHECK(evictions > 1000);
    CHECK(rejected_all_pinned > 10);
  }
}

TEST_CASE("a tier that gives its policy slot ids decides what a tier with fact ids decides") {
  // LRU takes slot ids; a second tier keeps fact ids. Both replay the same lookups, inserts of
  // three sizes, pins (told or untold), removals and probes of victim(); every answer, eviction
  // list, byte count and statistic must agree. 120 facts, room for about 40: slots are reused
  // thousands of times, and the store is at times entirely pinned.
  for (const bool told : {true, false}) {
    INFO((told ? "told of pins" : "untold"));
    PolicyArgs args;
    StoreTier slots("gpu", 400, PolicyRegistry::make_eviction("lru", args, "test"), nullptr, "lru");
    // The same LRU told to keep fact ids.
    StoreTier facts("gpu", 400, std::make_unique<test::ForwardingLru>(/*slot_ids=*/false), nullptr,
                    "lru");
    REQUIRE(slots.slot_ids());
    REQUIRE_FALSE(facts.slot_ids());
    Pins pins;
    slots.set_view(&pins, told);
    facts.set_view(&pins, told);
    std::uint64_t state = 99;
    auto next = [&state] {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      return state >> 33;
    };
    std::vector<FactId> ev_slots, ev_facts;
    std::uint64_t evictions = 0, full_of_pins = 0, removals = 0;
    for (int step = 0; step < 40000; ++step) {
      const auto op = next() % 20;
      const FactId f = next() % 120;
      const std::uint64_t bytes = 5 + 5 * (f % 3);  // 5, 10 or 15 bytes
      if (op < 10) {
        const bool hit = slots.lookup(entry(f, bytes), step);
        REQUIRE(facts.lookup(entry(f, bytes), step) == hit);
        if (hit) continue;
        ev_slots.clear();
        ev_facts.clear();
        const bool placed = slots.insert(entry(f, bytes), step, &ev_slots);
        REQUIRE(facts.insert(entry(f, bytes), step, &ev_facts) == placed);
        REQUIRE(ev_slots == ev_facts);
        evictions += ev_slots.size();
        if (!placed) ++full_of_pins;
      } else if (op < 16) {  // pins outnumber unpins: often every resident is pinned
        if (slots.resident(f) && pins.pinned_ids.insert(f).second && told) {
          slots.on_pinned(f);
          facts.on_pinned(f);
        }
      } else if (op < 17) {
        if (pins.pinned_ids.erase(f) != 0 && told) {
          slots.on_unpinned(f);
          facts.on_unpinned(f);
        }
      } else if (op < 19) {
        if (slots.resident(f) && pins.pinned_ids.count(f) == 0) {
          slots.remove(f);
          facts.remove(f);
          ++removals;
        }
      } else {
        EvictionContext ctx;
        ctx.run = &pins;
        ctx.bytes_needed = 1;
        const auto v = slots.victim(ctx);
        REQUIRE(v == facts.victim(ctx));
        if (v) {
          CHECK(slots.resident(*v));
          CHECK(pins.pinned_ids.count(*v) == 0);
        }
      }
      REQUIRE(slots.used_bytes() == facts.used_bytes());
      REQUIRE(slots.resident_count() == facts.resident_count());
    }
    CHECK(slots.stats().hits == facts.stats().hits);
    CHECK(slots.stats().evictions == facts.stats().evictions);
    INFO(evictions << " evictions, " << full_of_pins << " rejected, " << removals << " removals");
    CHECK(evictions > 5000);
    CHECK(full_of_pins > 10);
    CHECK(removals > 100);
  }
}

TEST_CASE("a slot-id policy's answer that names no resident fact is stopped") {
  // A policy that takes slot ids and names a slot never used, then a freed slot.
  class BadSlots : public EvictionPolicy {
   public:
    FactId answer = 7;
    void on_insert(const CacheEntry&, SimTime) override {}
    void on_hit(const CacheEntry&, SimTime) override {}
    void on_remove(FactId) override {}
    bool slot_ids() const override { return true; }
    std::optional<FactId> victim(const EvictionContext&) const override { return answer; }
  };
  auto policy = std::make_unique<BadSlots>();
  BadSlots* bad = policy.get();
  StoreTier tier("gpu", 20, std::move(policy), nullptr, "bad");
  REQUIRE(tier.slot_ids());
  Pins pins;
  tier.set_view(&pins, true);
  std::vector<FactId> evicted;
  REQUIRE(tier.insert(entry(100), 0, &evicted));  // slot 0
  REQUIRE(tier.insert(entry(200), 0, &evicted));  // slot 1
  CHECK_THROWS_AS(tier.insert(entry(300), 1, &evicted), PolicyContractError);
  tier.remove(100);                               // slot 0 is free now
  REQUIRE(tier.insert(entry(400), 2, &evicted));  // takes slot 0 again
  bad->answer = 0;
  CHECK(tier.victim(EvictionContext{}) == std::optional<FactId>(400));
  tier.remove(400);
  CHECK_THROWS_AS(tier.victim(EvictionContext{}), PolicyContractError);
  pins.pinned_ids = {200};
  tier.on_pinned(200);
  bad->answer = 1;
  REQUIRE(tier.insert(entry(500), 3, &evicted));  // room without an eviction
  CHECK_THROWS_AS(tier.insert(entry(600), 3, &evicted), PolicyContractError);  // slot 1: pinned
}

TEST_CASE("a tier reads entries' details unless its policies need only ids and bytes") {
  PolicyArgs args;
  auto tier = [&](const char* eviction, const char* admission) {
    return std::make_unique<StoreTier>(
        "gpu", 100, PolicyRegistry::make_eviction(eviction, args, "test"),
        PolicyRegistry::make_admission(admission, args, "test"), eviction);
  };
  CHECK_FALSE(tier("lru", "always")->reads_entry_details());
  CHECK(tier("lru", "tinylfu")->reads_entry_details());
  // LRU with fact ids.
  CHECK(StoreTier("gpu", 100, std::make_unique<test::ForwardingLru>(/*slot_ids=*/false),
                  PolicyRegistry::make_admission("always", args, "test"), "lru")
            .reads_entry_details());
  CHECK(tier("fifo", "always")->reads_entry_details());
  CHECK(tier("gdsf", "always")->reads_entry_details());
  // Admission of everything is not asked: nothing is rejected but for want of room.
  auto t = tier("lru", "always");
  Pins pins;
  t->set_view(&pins, true);
  std::vector<FactId> evicted;
  for (FactId id = 0; id < 50; ++id) REQUIRE(t->insert(entry(id), SimTime(id), &evicted));
  CHECK(t->stats().rejected == 0);
  CHECK(t->stats().inserts == 50);
  CHECK(evicted.size() == 40);
}
