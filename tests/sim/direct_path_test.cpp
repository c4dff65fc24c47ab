// The direct path (StoreTier::direct, lookup_direct, insert_direct): a tier whose eviction policy
// is the built-in LRU calls it without virtual calls, and a replica with such a GPU tier and no
// host tier looks up and places facts through it. A test-only policy that forwards every virtual
// call to an Lru is not recognised as LRU, so it takes the generic path with the same decisions
// to make: tiers and whole runs must agree exactly.
#include <set>

#include "policies/lru.h"
#include "policies/registry.h"
#include "sim/config/experiment.h"
#include "sim/store_tier.h"
#include "tests/catch.h"
#include "tests/sim/forwarding_lru.h"
#include "tests/sim/same_run.h"
#include "tests/sim/sim_test_util.h"
#include "tests/sim/small_trace.h"

namespace inferscale {

// LRU behind virtual calls only: a tier cannot call it directly.
INFERSCALE_REGISTER_EVICTION(lru_virtual_test, "LRU behind virtual calls only (test only)", {},
                             [](const PolicyArgs&) {
                               return std::make_unique<test::ForwardingLru>(/*slot_ids=*/true);
                             });

}  // namespace inferscale

using namespace inferscale;
using namespace inferscale::test;

namespace {

/// Pins by fact id, with a count of unpins (so LRU may skip the pinned tail it found).
class CountedPins : public RunView {
 public:
  std::set<FactId> pinned_ids;
  std::uint64_t unpins = 0;
  bool pinned(FactId id) const override { return pinned_ids.count(id) != 0; }
  std::uint64_t unpin_count() const override { return unpins; }
  bool user_in_flight(UserId) const override { return false; }
  SimTime user_last_active(UserId) const override { return kNever; }
  std::int64_t next_access(FactId) const override { return kNever; }
  std::int64_t position() const override { return 0; }
  FactId fact_id_bound() const override { return 1000; }
};

CacheEntry entry(FactId id, std::uint64_t bytes) {
  CacheEntry e;
  e.id = id;
  e.bytes = bytes;
  return e;
}

}  // namespace

TEST_CASE("a direct LRU tier decides what the same LRU behind virtual calls decides") {
  // 120 facts of three sizes, room for about 40: slots are reused thousands of times, pins
  // outnumber unpins (the store is at times entirely pinned), removals and probes of victim()
  // in between. Every answer, eviction list, byte count and statistic must agree.
  PolicyArgs args;
  StoreTier direct("gpu", 400, PolicyRegistry::make_eviction("lru", args, "test"),
                   PolicyRegistry::make_admission("always", args, "test"), "lru");
  StoreTier generic("gpu", 400, PolicyRegistry::make_eviction("lru_virtual_test", args, "test"),
                    PolicyRegistry::make_admission("always", args, "test"), "lru_virtual_test");
  // The unchecked calls a direct replica makes (hit_slot, count_lookups, pin_slot,
  // unpin_direct), on a third tier: the same answers again.
  StoreTier unchecked("gpu", 400, PolicyRegistry::make_eviction("lru", args, "test"),
                      PolicyRegistry::make_admission("always", args, "test"), "lru");
  CountedPins pins;
  REQUIRE_FALSE(direct.direct());  // not before it is told of pins
  direct.set_view(&pins, true);
  generic.set_view(&pins, true);
  unchecked.set_view(&pins, true);
  unchecked.reserve_ids(120);
  REQUIRE(unchecked.direct());
  REQUIRE(direct.direct());
  REQUIRE_FALSE(generic.direct());
  REQUIRE(generic.slot_ids());
  std::uint64_t state = 7;
  auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  std::vector<FactId> ev_direct, ev_generic, ev_unchecked;
  std::uint64_t evictions = 0, rejected = 0, removals = 0, hits = 0, pinned_by_slot = 0;
  for (int step = 0; step < 40000; ++step) {
    const auto op = next() % 20;
    const FactId f = next() % 120;
    const std::uint64_t bytes = 5 + 5 * (f % 3);  // 5, 10 or 15 bytes
    if (op < 10) {
      const bool hit = direct.lookup_direct(f, bytes);
      REQUIRE(generic.lookup(entry(f, bytes), step) == hit);
      const std::uint32_t slot = unchecked.hit_slot(f);
      REQUIRE((slot != StoreTier::kNoSlot) == hit);
      unchecked.count_lookups(1, bytes, hit ? 1 : 0, hit ? bytes : 0);
      if (hit) {
        ++hits;
        // A replica pins a hit through its slot as it finds it.
        if (next() % 2 == 0 && pins.pinned_ids.insert(f).second) {
          direct.on_pinned(f);
          generic.on_pinned(f);
          unchecked.pin_slot(slot);
          ++pinned_by_slot;
        }
        continue;
      }
      ev_direct.assign(1, 999);  // appended to, not cleared
      ev_generic.clear();
      const bool placed = direct.insert_direct(f, bytes, pins.pinned(f), ev_direct);
      REQUIRE(generic.insert(entry(f, bytes), step, &ev_generic) == placed);
      ev_unchecked.clear();
      REQUIRE(unchecked.insert_direct(f, bytes, pins.pinned(f), ev_unchecked, pins.unpins) ==
              placed);
      REQUIRE(ev_direct.front() == 999);
      ev_direct.erase(ev_direct.begin());
      REQUIRE(ev_direct == ev_generic);
      REQUIRE(ev_unchecked == ev_generic);
      evictions += ev_direct.size();
      if (!placed) ++rejected;
    } else if (op < 16) {
      if (direct.resident(f) && pins.pinned_ids.insert(f).second) {
        direct.on_pinned(f);
        generic.on_pinned(f);
        unchecked.on_pinned(f);
      }
    } else if (op < 17) {
      if (pins.pinned_ids.erase(f) != 0) {
        ++pins.unpins;
        direct.on_unpinned(f);
        generic.on_unpinned(f);
        unchecked.unpin_direct(f);
      }
    } else if (op < 19) {
      if (direct.resident(f) && pins.pinned_ids.count(f) == 0) {
        direct.remove(f);
        generic.remove(f);
        unchecked.remove(f);
        ++removals;
      }
    } else {
      EvictionContext ctx;
      ctx.run = &pins;
      ctx.bytes_needed = 1;
      REQUIRE(direct.victim(ctx) == generic.victim(ctx));
      REQUIRE(unchecked.victim(ctx) == generic.victim(ctx));
    }
    REQUIRE(direct.used_bytes() == generic.used_bytes());
    REQUIRE(direct.resident_count() == generic.resident_count());
    REQUIRE(unchecked.used_bytes() == generic.used_bytes());
    REQUIRE(unchecked.resident_count() == generic.resident_count());
  }
  const TierStats& b = generic.stats();
  for (const StoreTier* tier : {&direct, &unchecked}) {
    const TierStats& a = tier->stats();
    CHECK(a.lookups == b.lookups);
    CHECK(a.lookup_bytes == b.lookup_bytes);
    CHECK(a.hits == b.hits);
    CHECK(a.hit_bytes == b.hit_bytes);
    CHECK(a.inserts == b.inserts);
    CHECK(a.rejected == b.rejected);
    CHECK(a.evictions == b.evictions);
    CHECK(a.peak_bytes == b.peak_bytes);
  }
  CHECK(pinned_by_slot > 100);
  INFO(evictions << " evictions, " << rejected << " rejected, " << removals << " removals");
  CHECK(hits > 1000);
  CHECK(evictions > 5000);
  CHECK(rejected > 10);
  CHECK(removals > 100);
}

TEST_CASE("runs through direct LRU tiers equal runs through LRU behind virtual calls") {
  const auto dir = temp_dir("direct_path");
  // Tight KV memory, a small store and a small token budget: preemptions, full stores, stores
  // entirely pinned, encodes deferred to later steps, memory writes during the run.
  const std::string body = kStressBody;
  const char* stores[] = {
      "store: {gpu: {capacity: 24KiB, eviction: lru}}\n",
      "store: {gpu: {capacity: 8KiB, eviction: lru}, warm: true}\n",
      "store: {gpu: {capacity: 40KiB, eviction: lru}, warm: true}\n",
      // A host tier: the replica's generic path in both runs, the GPU tier direct or not.
      "store: {gpu: {capacity: 8KiB, eviction: lru}, host: {capacity: 16KiB, eviction: lru}}\n",
  };
  const char* routers[] = {"round_robin", "least_loaded", "user_affinity"};
  std::uint64_t encodes = 0;
  int i = 0;
  for (const double rate : {30.0, 3000.0}) {
    for (const std::uint32_t out : {1u, 40u}) {
      SmallTrace t;  // memory writes during the run: facts added after the replicas start
      t.seed = 57 + i;
      t.rate = rate;
      t.output_tokens = out;
      const std::string trace = small_trace(dir, "syn", t);
      for (const char* store : stores) {
        encodes += check_same_as_lru(
            dir, trace,
            body + "replicas: " + std::to_string(1 + i % 3) + "\nrouter: " + routers[i % 3] + "\n",
            store, "lru_virtual_test", {false, true});
        ++i;
      }
    }
  }
  CHECK(encodes > 1000);
}
