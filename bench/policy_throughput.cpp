// Policy engine throughput: lookups per second of every registered eviction policy behind one
// StoreTier, on 10M accesses drawn from a Zipf(0.99) distribution over N equal-sized facts
// (fixed seed, generated in memory), at a capacity of 10 % of the facts. Each access is a lookup
// and, on a miss, an insert (admission `always`, evictions as needed). Online policies run
// without a RunView (no pins); offline ones get the trace's access oracle.
// N = 1M is the reference workload; N = 100k keeps every per-fact array in cache, which separates
// the engine's own cost from memory latency. Results: bench/results/policy_throughput.md.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "policies/registry.h"
#include "sim/access_oracle.h"
#include "sim/store_tier.h"
#include "traces/prng.h"

namespace inferscale {
namespace {

constexpr std::size_t kAccesses = 10'000'000;
constexpr double kZipfAlpha = 0.99;

struct Workload {
  std::size_t objects = 0;
  std::vector<FactId> ids;  // [kAccesses]
  std::unique_ptr<AccessOracle> oracle;
};

Workload make_workload(std::size_t objects) {
  Workload w;
  w.objects = objects;
  std::vector<double> cdf(objects);
  double sum = 0;
  for (std::size_t r = 0; r < objects; ++r) cdf[r] = sum += std::pow(double(r + 1), -kZipfAlpha);
  std::vector<FactId> id_of_rank(objects);
  for (std::size_t r = 0; r < objects; ++r) id_of_rank[r] = r;
  Rng rng(20240611);
  shuffle(id_of_rank, rng);  // popular facts spread over the id space
  w.ids.resize(kAccesses);
  for (auto& id : w.ids) {
    const double u = rng.uniform() * sum;
    const auto r = std::lower_bound(cdf.begin(), cdf.end(), u) - cdf.begin();
    id = id_of_rank[std::min<std::size_t>(r, objects - 1)];
  }
  std::vector<std::uint64_t> offsets(kAccesses + 1);  // one fact per request
  for (std::size_t i = 0; i <= kAccesses; ++i) offsets[i] = i;
  w.oracle = std::make_unique<AccessOracle>(AccessOracle::from_csr(offsets, w.ids));
  return w;
}

/// The workload over `objects` facts (1M or 100k), generated once.
const Workload& workload(std::size_t objects) {
  static const Workload large = make_workload(1'000'000), small = make_workload(100'000);
  return objects == small.objects ? small : large;
}

/// Offline policies' view: the oracle's cursor, nothing pinned.
class OracleView final : public RunView {
 public:
  OracleView(const AccessOracle& o, std::size_t objects) : cursor(o), objects_(objects) {}
  bool pinned(FactId) const override { return false; }
  bool user_in_flight(UserId) const override { return false; }
  SimTime user_last_active(UserId) const override { return kNever; }
  std::int64_t next_access(FactId id) const override { return cursor.next_access(id); }
  std::int64_t position() const override { return cursor.position(); }
  FactId fact_id_bound() const override { return objects_; }
  AccessCursor cursor;

 private:
  std::size_t objects_;
};

void run_policy(benchmark::State& state, const std::string& name, bool offline) {
  const auto objects = static_cast<std::size_t>(state.range(0));
  const Workload& w = workload(objects);
  const std::uint64_t capacity = objects / 10;  // bytes; every fact is 1 byte
  std::uint64_t hits = 0, lookups = 0;
  for (auto _ : state) {
    state.PauseTiming();
    PolicyArgs args{Params{}, capacity, 1};
    StoreTier tier("gpu", capacity, PolicyRegistry::make_eviction(name, args, "bench"),
                   PolicyRegistry::make_admission("always", args, "bench"), name);
    std::unique_ptr<OracleView> view;
    if (offline) {
      view = std::make_unique<OracleView>(*w.oracle, objects);
      tier.set_view(view.get());
    }
    CacheEntry e;
    e.bytes = 1;
    e.tokens = 1;
    e.recompute_cost_ns = 1000;
    state.ResumeTiming();
    for (std::size_t i = 0; i < kAccesses; ++i) {
      e.id = w.ids[i];
      e.user = e.id % 1000;
      const auto now = static_cast<SimTime>(i);
      if (view) view->cursor.begin_request(now, {&w.ids[i], 1});
      if (!tier.lookup(e, now)) tier.insert(e, now, nullptr);
    }
    benchmark::DoNotOptimize(tier.used_bytes());
    hits += tier.stats().hits;
    lookups += tier.stats().lookups;
  }
  state.counters["lookups_per_s"] =
      benchmark::Counter(double(lookups), benchmark::Counter::kIsRate);
  state.counters["miss_ratio"] = 1.0 - double(hits) / double(std::max<std::uint64_t>(1, lookups));
}

}  // namespace
}  // namespace inferscale

int main(int argc, char** argv) {
  using namespace inferscale;
  std::vector<EvictionInfo> policies = PolicyRegistry::eviction();
  std::sort(policies.begin(), policies.end(),
            [](const EvictionInfo& a, const EvictionInfo& b) { return a.name < b.name; });
  for (const auto& info : policies) {
    // plugin, plugin_offline: need a library; the example's victim is O(n)
    if (info.name.rfind("plugin", 0) == 0) continue;
    benchmark::RegisterBenchmark(("policy/" + info.name).c_str(),
                                 [name = info.name, offline = info.offline](benchmark::State& s) {
                                   run_policy(s, name, offline);
                                 })
        ->ArgName("objects")
        ->Arg(1'000'000)
        ->Arg(100'000)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(2);  // rates per CPU second: the machine may be shared
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  workload(1'000'000);  // generate the traces before any timing
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
