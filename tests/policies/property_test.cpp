// Properties of every registered eviction policy (the registry is iterated, so a new policy is
// covered without touching this file) over random traces: capacity never exceeded, pinned facts
// never evicted, victim() without side effects, and Belady's OPT at least as good as every online
// policy.
#include <random>

#include "tests/catch.h"
#include "tests/policies/policy_harness.h"

using namespace inferscale;
using namespace inferscale::test;

namespace {

/// Requests of 1..max_k distinct facts, skewed toward low ids; sizes uniform or 1..5 units.
SmallTrace random_trace(std::uint64_t seed, std::size_t facts, std::size_t requests,
                        std::size_t max_k, bool uniform_sizes) {
  std::mt19937_64 rng(seed);
  const auto uniform = [&] { return double(rng() >> 11) * 0x1.0p-53; };
  SmallTrace t;
  for (std::size_t f = 0; f < facts; ++f) {
    t.facts.push_back(TraceFact{uniform_sizes ? 10 : 10 * (1 + rng() % 5), f % 6,
                                static_cast<SimTime>(50 + rng() % 1000)});
  }
  SimTime time = 0;
  for (std::size_t i = 0; i < requests; ++i) {
    TraceRequest r;
    const std::size_t k = 1 + rng() % max_k;
    while (r.facts.size() < k) {
      const double u = uniform();
      const auto f = static_cast<FactId>(double(facts) * u * u * u);  // skewed
      if (std::find(r.facts.begin(), r.facts.end(), f) == r.facts.end()) r.facts.push_back(f);
    }
    r.user = t.facts[r.facts[0]].user;
    time += static_cast<SimTime>(1 + rng() % 1000) * kNsPerUs;
    r.time = time;
    t.requests.push_back(std::move(r));
  }
  return t;
}

/// Every registered eviction policy, with the parameters it needs to be built.
std::vector<std::pair<std::string, Params>> all_policies() {
  std::vector<std::pair<std::string, Params>> out;
  for (const auto& info : PolicyRegistry::eviction()) {
    Params p("params");
    if (info.name == "plugin" || info.name == "plugin_offline") {
      p.set("path", INFERSCALE_EXAMPLE_POLICY);
    }
    out.emplace_back(info.name, p);
  }
  return out;
}

std::uint64_t total_bytes(const SmallTrace& t) {
  std::uint64_t sum = 0;
  for (const auto& f : t.facts) sum += f.bytes;
  return sum;
}

/// Pins a few resident facts besides the request's (other requests running).
void pin_others(TestView& view, const StoreTier& tier, std::mt19937_64& rng, std::size_t facts) {
  for (int i = 0; i < 3; ++i) {
    const FactId f = rng() % facts;
    if (tier.resident(f)) view.pins.insert(f);
  }
}

}  // namespace

TEST_CASE("every policy keeps capacity and pins, and its victims are resident and unpinned") {
  for (const auto& [name, params] : all_policies()) {
    for (std::uint64_t seed : {1, 2, 3}) {
      for (double share : {0.1, 0.3}) {
        INFO("policy " << name << ", seed " << seed << ", capacity share " << share);
        const auto trace = random_trace(seed, 80, 1500, 4, false);
        const AccessOracle oracle(trace.fact_lists());
        const auto capacity = static_cast<std::uint64_t>(share * double(total_bytes(trace)));
        std::mt19937_64 rng(seed * 31);
        StoreTier* tier_seen = nullptr;
        std::uint64_t violations = 0, bad_victims = 0;
        const Hook check_victim = [&](StoreTier& tier, TestView& view, const CacheEntry* in) {
          tier_seen = &tier;
          EvictionContext ctx;
          ctx.run = &view;
          ctx.incoming = in;
          const auto v = tier.victim(ctx);
          if (v && (!tier.resident(*v) || view.pinned(*v))) ++bad_victims;
        };
        const AfterInsert check_insert = [&](StoreTier& tier, TestView& view,
                                             const std::vector<FactId>& evicted) {
          if (tier.used_bytes() > tier.capacity_bytes()) ++violations;
          for (FactId f : evicted) {
            if (view.pinned(f) || tier.resident(f)) ++violations;
          }
        };
        const auto out = replay(
            trace, make_tier(name, capacity, params), &oracle, check_victim,
            [&](TestView& view, std::size_t) {
              if (tier_seen) pin_others(view, *tier_seen, rng, trace.facts.size());
            },
            check_insert);
        CHECK(violations == 0);
        CHECK(bad_victims == 0);
        CHECK(out.stats.peak_bytes <= capacity);
        CHECK(out.stats.lookups > 0);
      }
    }
  }
}

TEST_CASE("extra victim() calls, with any context, change no decision") {
  for (const auto& [name, params] : all_policies()) {
    for (std::uint64_t seed : {4, 5}) {
      INFO("policy " << name << ", seed " << seed);
      const auto trace = random_trace(seed, 60, 1200, 3, false);
      const AccessOracle oracle(trace.fact_lists());
      const auto capacity = total_bytes(trace) / 4;
      const auto plain = replay(trace, make_tier(name, capacity, params), &oracle);
      std::mt19937_64 rng(seed);
      TestView other;  // a view with different pins and users in flight
      const Hook probe = [&](StoreTier& tier, TestView& view, const CacheEntry* in) {
        const StoreTier& policy = tier;  // its victim() speaks fact ids, as the views do
        EvictionContext real;
        real.run = &view;
        real.incoming = in;
        const auto a = policy.victim(real);
        const auto b = policy.victim(real);
        CHECK(a == b);  // repeatable
        other.pins.clear();
        for (int i = 0; i < 5; ++i) other.pins.insert(rng() % trace.facts.size());
        other.in_flight = {rng() % 6};
        other.cursor = view.cursor;
        EvictionContext odd;
        odd.run = &other;
        odd.now = static_cast<SimTime>(rng() % 1000000);
        const auto stranger = entry(rng() % trace.facts.size(), 10 * (1 + rng() % 5));
        odd.incoming = &stranger;
        policy.victim(odd);
        EvictionContext bare;  // no view at all
        bare.run = nullptr;
        if (!PolicyRegistry::find_eviction(name)->offline) policy.victim(bare);
      };
      const auto probed = replay(trace, make_tier(name, capacity, params), &oracle, probe);
      CHECK(probed.hits == plain.hits);
      CHECK(probed.evicted == plain.evicted);
    }
  }
}

// Single-fact requests and uniform sizes: classic paging, where Belady's rule (evict the fact
// needed furthest ahead, bypass one needed later than all) is optimal. With variable sizes Belady
// is only a heuristic, and with multi-fact requests the pins of the running request constrain
// every policy differently, so the bound would not be a theorem there.
TEST_CASE("Belady's OPT hits at least as often as every online policy") {
  for (std::uint64_t seed : {11, 12, 13}) {
    const auto trace = random_trace(seed, 120, 3000, 1, true);
    const AccessOracle oracle(trace.fact_lists());
    for (std::uint64_t slots : {3, 10, 30, 60}) {
      const std::uint64_t capacity = 10 * slots;
      const auto opt = replay(trace, make_tier("belady", capacity), &oracle);
      const auto opt_sized = replay(trace, make_tier("belady_size", capacity), &oracle);
      CHECK(opt_sized.stats.hits == opt.stats.hits);  // uniform sizes: the same rule
      for (const auto& [name, params] : all_policies()) {
        if (PolicyRegistry::find_eviction(name)->offline) continue;
        INFO("policy " << name << ", seed " << seed << ", " << slots << " slots");
        const auto online = replay(trace, make_tier(name, capacity, params), &oracle);
        CHECK(opt.stats.hits >= online.stats.hits);
      }
    }
  }
}
