// Slot ids (EvictionPolicy::slot_ids) and the replica's global ids: with LRU on every tier, a
// replica names facts by their global ids and its tiers give LRU slot ids. A test-only copy of
// LRU that keeps fact ids (so the replica keeps its first-sight local ids) must give
// byte-identical requests.csv and the same summary on the same runs.
#include <algorithm>
#include <random>
#include <unordered_map>

#include "policies/registry.h"
#include "sim/config/experiment.h"
#include "sim/executor_factory.h"
#include "sim/fact_id_map.h"
#include "sim/fact_table.h"
#include "sim/simulator.h"
#include "tests/catch.h"
#include "tests/sim/forwarding_lru.h"
#include "tests/sim/same_run.h"
#include "tests/sim/sim_test_util.h"
#include "tests/sim/small_trace.h"
#include "traces/synthetic.h"
#include "traces/writer.h"

namespace inferscale {

// LRU with fact ids (slot_ids() false): the replica keeps its first-sight local ids.
INFERSCALE_REGISTER_EVICTION(lru_fact_ids_test, "LRU with fact ids (test only)", {},
                             [](const PolicyArgs&) {
                               return std::make_unique<test::ForwardingLru>(/*slot_ids=*/false);
                             });

}  // namespace inferscale

using namespace inferscale;
using namespace inferscale::test;

namespace {

std::string synthetic_trace(const std::filesystem::path& dir, std::uint64_t seed, double rate,
                            std::uint32_t output_tokens) {
  SmallTrace t;  // memory writes during the run: facts added after the replicas start
  t.seed = seed;
  t.rate = rate;
  t.output_tokens = output_tokens;
  return small_trace(dir, "syn", t);
}

const char* kRouters[] = {"round_robin", "least_loaded", "user_affinity"};

}  // namespace

TEST_CASE("LRU with slot ids and global ids decides as LRU with fact ids") {
  const auto dir = temp_dir("slot_ids");
  // Tight KV memory, a small store and a small token budget: preemptions, full stores, stores
  // entirely pinned, encodes deferred to later steps.
  const std::string body = kStressBody;
  const char* stores[] = {
      "store: {gpu: {capacity: 24KiB, eviction: lru}}\n",
      "store: {gpu: {capacity: 24KiB, eviction: lru}, host: {capacity: 32KiB, eviction: lru}}\n",
      "store: {gpu: {capacity: 8KiB, eviction: lru}, host: {capacity: 16KiB, eviction: lru},"
      " warm: true}\n",
  };
  std::uint64_t encodes = 0;
  int i = 0;
  for (const double rate : {30.0, 3000.0}) {
    for (const std::uint32_t out : {1u, 40u}) {
      const std::string trace = synthetic_trace(dir, 31 + i, rate, out);
      for (const char* store : stores) {
        encodes += check_same_as_lru(
            dir, trace,
            body + "replicas: " + std::to_string(1 + i % 3) + "\nrouter: " + kRouters[i % 3] + "\n",
            store, "lru_fact_ids_test");
        ++i;
      }
    }
  }
  CHECK(encodes > 1000);
}

TEST_CASE("FactTable's token records follow its facts") {
  FactTable table;
  for (std::uint32_t i = 0; i < 1000; ++i) {
    FactInfo f;
    f.user = i / 7;
    f.tokens = 1 + i % 97;
    f.encode_context_tokens = (i * 13) % 41;
    f.recompute_cost_ns = i;
    REQUIRE(table.add(f, 5000 + i, i % 3 == 0) == i);
  }
  REQUIRE(table.size() == 1000);
  for (std::uint32_t i = 0; i < 1000; ++i) {
    CHECK(table.tokens(i).tokens == table[i].tokens);
    CHECK(table.tokens(i).encode_context_tokens == table[i].encode_context_tokens);
    CHECK(table.tokens(i).tokens == 1 + i % 97);
    CHECK(table.external(i) == 5000 + i);
    CHECK(table.memory_write(i) == (i % 3 == 0));
  }
}

TEST_CASE("FactTable keeps a declared fact in a byte or two") {
  constexpr std::uint32_t kFacts = 100000;
  // Users' facts declared together with consecutive trace ids (a generated population, a
  // written one read back): runs. Interleaved users or scattered ids: a flat table.
  for (const bool runs : {true, false}) {
    INFO(runs);
    FactTable table;
    table.reserve(kFacts);
    auto external = [&](std::uint32_t i) {
      return runs ? 1000 + std::uint64_t{i} : 7 * std::uint64_t{i};
    };
    for (std::uint32_t i = 0; i < kFacts; ++i) {
      FactInfo f;
      f.user = i / 127;
      f.tokens = 1 + i % 40;
      f.recompute_cost_ns = 1000 * f.tokens;
      REQUIRE(table.add(f, external(i), false) == i);
    }
    CHECK(table.shapes() == 40);
    CHECK(table.flat() == !runs);
    const std::size_t per_fact = runs ? 1 : 9;  // a shape code (and user and id in 4 bytes each)
    CHECK(table.bytes() <= per_fact * kFacts + kFacts / 127 * 24 + 64 * 1024);
    for (std::uint32_t i = 0; i < kFacts; i += 37) {
      const FactInfo f = table[i];
      CHECK(f.user == i / 127);
      CHECK(table.user(i) == i / 127);
      CHECK(f.tokens == 1 + i % 40);
      CHECK(f.recompute_cost_ns == 1000 * f.tokens);
      CHECK(f.created == 0);
      CHECK(table.external(i) == external(i));
    }
    // A fact created during the run, a user and an id past 32 bits: the earlier facts read the
    // same, the new ones exactly.
    FactInfo late;
    late.user = (std::uint64_t{1} << 40) + 3;
    late.created = 123456789;
    late.tokens = 17;
    const FactId id = table.add(late, (std::uint64_t{1} << 50) + 1, true);
    CHECK(table[id].user == late.user);
    CHECK(table[id].created == late.created);
    CHECK(table.external(id) == (std::uint64_t{1} << 50) + 1);
    CHECK(table.memory_write(id));
    CHECK_FALSE(table.memory_write(0));
    CHECK(table[5].created == 0);
    CHECK(table[5].user == 0);
    CHECK(table.external(kFacts - 1) == external(kFacts - 1));
    CHECK(table.shapes() == 41);
    // More than 256 shapes: wider codes, the same values.
    for (std::uint32_t i = 0; i < 70000; ++i) {
      FactInfo f;
      f.user = 9;
      f.tokens = 100 + i;
      table.add(f, 0, false);
    }
    CHECK(table.shapes() == 70041);
    CHECK(table[kFacts + 1 + 69999].tokens == 100 + 69999);
    CHECK(table[kFacts + 1 + 300].tokens == 100 + 300);
    CHECK(table[3].tokens == 4);
    CHECK(table.tokens(id).tokens == 17);
  }
}

TEST_CASE("FactIdMap finds what was inserted since its last rebuild, and nothing else") {
  // Inserted by key, or (every other round) into the slot of the probe that found the key absent.
  // Records by id (global or kFree) as a replica keeps them: facts take the lowest free id,
  // sweeps free some and rebuild the map; keys from a small range so that probe runs meet.
  constexpr std::uint64_t kFree = ~std::uint64_t{0};
  FactIdMap map;
  std::vector<std::uint64_t> records;
  std::unordered_map<std::uint64_t, std::uint32_t> reference;  // global -> id + 1
  std::uint64_t state = 12345;
  auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  for (int round = 0; round < 200000; ++round) {
    const std::uint64_t key = next() % 5000;
    const auto it = reference.find(key);
    const std::uint32_t expected = it == reference.end() ? 0u : it->second;
    REQUIRE(map.find(key) == expected);
    const FactIdMap::Probe probe = map.probe(key);
    REQUIRE(probe.value == expected);
    if (it == reference.end()) {
      auto free = std::find(records.begin(), records.end(), kFree);
      if (free == records.end()) free = records.insert(records.end(), kFree);
      *free = key;
      const auto id = static_cast<std::uint32_t>(free - records.begin());
      if (round % 2 == 0) {
        map.insert_at(probe, key, id + 1);
      } else {
        map.insert(key, id + 1);
      }
      reference.emplace(key, id + 1);
    }
    if (round % 5000 == 4999) {  // a sweep frees about half
      for (auto& g : records) {
        if (g != kFree && next() % 2 == 0) {
          reference.erase(g);
          g = kFree;
        }
      }
      map.rebuild(
          records.size(), [&](std::size_t i) { return records[i]; }, kFree);
    }
    REQUIRE(map.size() == reference.size());
  }
  for (const auto& [key, value] : reference) CHECK(map.find(key) == value);
  for (std::uint64_t key = 0; key < 5000; ++key) {
    if (!reference.contains(key)) CHECK(map.find(key) == 0);
  }
}

TEST_CASE("FactIdMap's rebuild maps the records left and nothing else") {
  FactIdMap map;
  std::vector<std::uint64_t> globals;
  for (std::uint64_t key = 0; key < 1000; ++key) {
    globals.push_back(key * 7);
    map.insert(key * 7, static_cast<std::uint32_t>(key + 1));
  }
  // A sweep frees every third record: the map again from those left.
  constexpr std::uint64_t kFree = ~std::uint64_t{0};
  for (std::size_t i = 0; i < globals.size(); i += 3) globals[i] = kFree;
  map.rebuild(
      globals.size(), [&](std::size_t i) { return globals[i]; }, kFree);
  CHECK(map.size() == 1000 - 334);
  for (std::uint64_t key = 0; key < 1000; ++key) {
    CHECK(map.find(key * 7) == (key % 3 == 0 ? 0u : key + 1));
  }
  map.insert(0, 5);  // a freed one taken again
  CHECK(map.find(0) == 5);
}
