#pragma once
// Test helpers: a RunView with settable pins and users, a tier built from the registry, and a
// replay of small traces (request = facts looked up together, pinned, misses inserted).

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "policies/registry.h"
#include "sim/access_oracle.h"
#include "sim/store_tier.h"

namespace inferscale::test {

class TestView : public RunView {
 public:
  std::set<FactId> pins;
  std::set<UserId> in_flight;
  AccessCursor* cursor = nullptr;
  std::int64_t pos = 0;

  bool pinned(FactId id) const override { return pins.count(id) != 0; }
  bool user_in_flight(UserId user) const override { return in_flight.count(user) != 0; }
  SimTime user_last_active(UserId) const override { return kNever; }
  std::int64_t next_access(FactId id) const override {
    return cursor != nullptr ? cursor->next_access(id) : kNever;
  }
  std::int64_t position() const override { return pos; }
  FactId fact_id_bound() const override { return 1u << 20; }
};

/// Params from name=value pairs.
inline Params params(std::initializer_list<std::pair<const char*, const char*>> kv) {
  Params p("params");
  for (const auto& [k, v] : kv) p.set(k, v);
  return p;
}

inline std::unique_ptr<StoreTier> make_tier(const std::string& eviction, std::uint64_t capacity,
                                            Params eviction_params = {},
                                            const std::string& admission = "always",
                                            Params admission_params = {}, std::uint64_t seed = 7) {
  PolicyArgs ev{eviction_params, capacity, seed};
  PolicyArgs ad{admission_params, capacity, seed + 1};
  return std::make_unique<StoreTier>(
      "gpu", capacity, PolicyRegistry::make_eviction(eviction, ev, "eviction"),
      PolicyRegistry::make_admission(admission, ad, "admission"), eviction);
}

inline CacheEntry entry(FactId id, std::uint64_t bytes = 10, UserId user = 0,
                        SimTime cost_ns = 100) {
  CacheEntry e;
  e.id = id;
  e.bytes = bytes;
  e.tokens = static_cast<std::uint32_t>(bytes);
  e.user = user;
  e.recompute_cost_ns = cost_ns;
  return e;
}

/// One tier with a view; access() is a lookup followed by an insert on a miss.
struct Bench {
  std::unique_ptr<StoreTier> tier;
  TestView view;
  std::vector<FactId> evicted;
  explicit Bench(std::unique_ptr<StoreTier> t) : tier(std::move(t)) { tier->set_view(&view); }
  /// True on a hit.
  bool access(const CacheEntry& e, SimTime now = 0) {
    if (tier->lookup(e, now)) return true;
    tier->insert(e, now, &evicted);
    return false;
  }
  bool access(FactId id, SimTime now = 0) { return access(entry(id), now); }
};

struct TraceFact {
  std::uint64_t bytes = 10;
  UserId user = 0;
  SimTime cost_ns = 100;
};
struct TraceRequest {
  std::vector<FactId> facts;  // distinct
  UserId user = 0;
  SimTime time = 0;
};
struct SmallTrace {
  std::vector<TraceFact> facts;
  std::vector<TraceRequest> requests;
  std::vector<std::vector<FactId>> fact_lists() const {
    std::vector<std::vector<FactId>> l;
    for (const auto& r : requests) l.push_back(r.facts);
    return l;
  }
};

struct Outcome {
  std::vector<std::uint8_t> hits;  // per lookup
  std::vector<FactId> evicted;
  TierStats stats;
  bool operator==(const Outcome& o) const { return hits == o.hits && evicted == o.evicted; }
};

/// Called before each request's lookups and before each insert.
using Hook = std::function<void(StoreTier&, TestView&, const CacheEntry* incoming)>;
/// Called after each insert with the facts it evicted.
using AfterInsert = std::function<void(StoreTier&, TestView&, const std::vector<FactId>& evicted)>;

/// Replays a trace: per request, its user in flight, lookups, pins on the request's facts, the
/// misses inserted. `oracle`: for offline policies.
inline Outcome replay(const SmallTrace& trace, std::unique_ptr<StoreTier> tier,
                      const AccessOracle* oracle = nullptr, const Hook& hook = {},
                      const std::function<void(TestView&, std::size_t)>& per_request = {},
                      const AfterInsert& after_insert = {}) {
  TestView view;
  std::unique_ptr<AccessCursor> cursor;
  if (oracle != nullptr) cursor = std::make_unique<AccessCursor>(*oracle);
  view.cursor = cursor.get();
  tier->set_view(&view);
  Outcome out;
  std::vector<FactId> misses;
  for (std::size_t i = 0; i < trace.requests.size(); ++i) {
    const auto& r = trace.requests[i];
    view.pos = static_cast<std::int64_t>(i);
    if (cursor) cursor->begin_request(view.pos, r.facts);
    view.pins.clear();
    view.in_flight = {r.user};
    if (per_request) per_request(view, i);
    if (hook) hook(*tier, view, nullptr);
    misses.clear();
    for (FactId f : r.facts) {
      const auto& tf = trace.facts[f];
      const bool hit = tier->lookup(entry(f, tf.bytes, tf.user, tf.cost_ns), r.time);
      out.hits.push_back(hit ? 1 : 0);
      if (!hit) misses.push_back(f);
      view.pins.insert(f);
    }
    for (FactId f : misses) {
      const auto& tf = trace.facts[f];
      const auto e = entry(f, tf.bytes, tf.user, tf.cost_ns);
      if (hook) hook(*tier, view, &e);
      const std::size_t before = out.evicted.size();
      tier->insert(e, r.time, &out.evicted);
      if (after_insert) {
        after_insert(*tier, view,
                     std::vector<FactId>(out.evicted.begin() + static_cast<long>(before),
                                         out.evicted.end()));
      }
    }
  }
  out.stats = tier->stats();
  return out;
}

/// A trace of single-fact requests, one per id in `ids`, uniform sizes.
inline SmallTrace sequence(std::initializer_list<FactId> ids, std::uint64_t bytes = 10) {
  SmallTrace t;
  FactId max = 0;
  for (FactId f : ids) max = std::max(max, f);
  t.facts.assign(max + 1, TraceFact{bytes, 0, 100});
  SimTime time = 0;
  for (FactId f : ids) t.requests.push_back(TraceRequest{{f}, 0, time++});
  return t;
}

}  // namespace inferscale::test
