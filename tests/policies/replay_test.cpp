// Cache replay (sim/cache_replay.h) and `inferscale policy mrc` on a hand-checked trace:
// facts a b c (10 tokens) and d (20), requests [a b] [a] [c d] [b a], 1 byte per token.
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "sim/cache_replay.h"
#include "tests/catch.h"

using namespace inferscale;

namespace {

const std::string kTrace = INFERSCALE_SOURCE_DIR "/tests/policies/data/replay.jsonl";

ReplayResult run(const std::string& policy, std::uint64_t capacity) {
  const auto trace = ReplayTrace::read(kTrace, 0);
  const auto oracle = AccessOracle::from_csr(trace.request_offsets, trace.request_facts);
  ReplayOptions o;
  o.eviction = policy;
  o.capacity_bytes = capacity;
  o.kv_bytes_per_token = 1;
  return replay_cache(trace, &oracle, o);
}

}  // namespace

TEST_CASE("a replay trace keeps facts in declaration order and requests as dense ids") {
  const auto t = ReplayTrace::read(kTrace, 1);
  REQUIRE(t.fact_count() == 4);
  REQUIRE(t.request_count() == 4);
  CHECK(t.fact_tokens == std::vector<std::uint32_t>{10, 10, 10, 20});
  CHECK(t.fact_context_tokens == std::vector<std::uint32_t>{5, 0, 0, 0});  // window 1
  const auto r4 = t.facts_of(3);
  CHECK(std::vector<FactId>(r4.begin(), r4.end()) == std::vector<FactId>{1, 0});
  CHECK(t.total_fact_tokens() == 50);
}

TEST_CASE("replay: lookups, pins on the running request, inserts of the misses") {
  // LRU, 40 bytes. [a b]: 2 misses. [a]: hit. [c d]: c fits, d evicts b (a was used later).
  // [b a]: a hits; b evicts c, since a is pinned by the request although least recent.
  const auto r = run("lru", 40);
  CHECK(r.stats.lookups == 7);
  CHECK(r.stats.hits == 2);
  CHECK(r.stats.evictions == 2);
  CHECK(r.object_miss_ratio() == Approx(5.0 / 7.0));
  CHECK(r.byte_miss_ratio() == Approx(60.0 / 80.0));
  // Recompute cost is per token of fact (and context): the misses carry 60 of 80 tokens.
  CHECK(r.cost_miss_ratio() == Approx(60.0 / 80.0));
}

TEST_CASE("replay: Belady with the trace's oracle does better than LRU here") {
  const auto r = run("belady", 40);
  // a at 1; a and b at 3. At 2, d (never used again) is bypassed rather than evict a or b.
  CHECK(r.stats.hits == 3);
  CHECK(r.stats.evictions == 0);
}

TEST_CASE("replay: an offline policy needs the oracle") {
  const auto trace = ReplayTrace::read(kTrace, 0);
  ReplayOptions o;
  o.eviction = "belady";
  o.capacity_bytes = 40;
  CHECK_THROWS_AS(replay_cache(trace, nullptr, o), InputError);
}

TEST_CASE("inferscale policy mrc writes one row per policy and capacity") {
  const std::string out = INFERSCALE_BINARY_DIR "/mrc_test.csv";
  std::remove(out.c_str());
  const std::string cmd = std::string(INFERSCALE_BINARY_DIR "/inferscale policy mrc ") + kTrace +
                          " --policies lru,belady --capacities 80%,40B --kv-bytes-per-token 1"
                          " --threads 2 --out " +
                          out + " 2>/dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream in(out);
  std::string header, line;
  std::getline(in, header);
  CHECK(header ==
        "trace,policy,capacity_bytes,capacity_fraction,object_miss_ratio,byte_miss_ratio,lookups,"
        "cost_miss_ratio,hits,misses");
  std::vector<std::string> rows;
  while (std::getline(in, line)) rows.push_back(line);
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].rfind("replay,belady,40,0.8,", 0) == 0);
  CHECK(rows[1].rfind("replay,belady,40,0.8,", 0) == 0);  // 80% of 50 bytes is 40 bytes
  CHECK(rows[2].rfind("replay,lru,40,0.8,0.714286,0.750000,7,", 0) == 0);
  CHECK(rows[2].ends_with(",2,5"));  // 7 lookups: 2 hits, 5 misses (5/7 = 0.714286)
}

TEST_CASE("inferscale policy mrc rejects bad input with status 2, leaving no file") {
  const std::string out = INFERSCALE_BINARY_DIR "/mrc_bad.csv";
  std::remove(out.c_str());
  const std::string base = std::string(INFERSCALE_BINARY_DIR "/inferscale policy mrc ") + kTrace;
  for (const char* bad :
       {" --capacities 5parsecs", " --capacities 150%", " --policies lru9", " --admission maybe"}) {
    INFO(bad);
    const int status = std::system((base + bad + " --out " + out + " 2>/dev/null").c_str());
    CHECK(WEXITSTATUS(status) == 2);
    CHECK_FALSE(std::ifstream(out).good());
  }
}
