// The warm window (sim/warm_window.h): which users a warm start inserts, and when it must
// insert them all. That the tiers then end as after a full warm start is checked here on the
// warm start's chain of store tiers, and by running both (fast_paths_test.cpp).
#include "sim/warm_window.h"

#include "sim/config/experiment.h"
#include "sim/executor_factory.h"
#include "sim/node_store.h"
#include "sim/simulator.h"
#include "sim/trace_source.h"
#include "tests/catch.h"
#include "tests/sim/sim_test_util.h"

using namespace inferscale;
using namespace inferscale::test;

namespace {

RunConfig config(const std::string& store, const std::string& more = {}) {
  const auto dir = temp_dir("warm_window");
  const std::string yaml =
      "experiment: w\nseed: 3\nmodel: llama-3.1-8b\ngpu: h200\nreplicas: 4\n"
      "trace: {generate: {users: 3000, requests: 10}}\n"
      "serving: {k: 20, mode: kv_inject}\nstore: " +
      store + "\n" + more;
  return load_experiment(write_text(dir / "exp.yaml", yaml), {}).runs.at(0);
}

SyntheticOptions population() {
  SyntheticOptions o;
  o.users = 3000;
  o.seed = 3;
  return o;
}

/// The warm start's chain on store tiers (Replica::warm_insert, NodeStore::demote): per replica
/// an LRU GPU tier, per node of `per_node` replicas an LRU host and an LRU disk tier, each
/// passing what it evicts to the next one down. Fed the facts of the users that `inserted`
/// accepts, in declaration order, each user's to its home replica (ids: the facts' places in
/// the population). Answers the resident facts of every tier (GPU tiers, then host, then disk
/// tiers).
template <class Inserted>
std::vector<std::vector<FactId>> warm_chain(const RunConfig& run, const SyntheticOptions& o,
                                            int per_node, Inserted inserted) {
  const int replicas = static_cast<int>(run.replicas);
  const int nodes = replicas / per_node;
  const HashRing home(replicas);
  std::vector<std::unique_ptr<StoreTier>> gpu, host, disk;
  for (int r = 0; r < replicas; ++r) gpu.push_back(make_store_tier("gpu", run.store.gpu, 1, true));
  for (int n = 0; n < nodes; ++n) {
    host.push_back(make_store_tier("host", run.store.host, 2, true));
    disk.push_back(make_store_tier("disk", run.store.disk, 3, true));
  }
  std::vector<std::uint64_t> bytes;  // by fact
  std::vector<FactId> evicted, host_evicted;
  SyntheticUsers users(o);
  for (std::uint64_t u = 0; u < o.users; ++u) {
    const FactId first = bytes.size();
    for (const auto t : users.static_tokens(u)) {
      bytes.push_back((t + 15) / 16 * 16 * run.fact_kv_bytes_per_token_per_gpu());
    }
    if (!inserted(u)) continue;
    const int r = home.owner(u);
    const int n = r / per_node;
    for (FactId f = first; f < bytes.size(); ++f) {
      evicted.clear();
      REQUIRE(gpu[r]->force_insert(lite_cache_entry(f, 0, bytes[f]), 0, &evicted));
      for (const FactId v : evicted) {
        host_evicted.clear();
        REQUIRE(host[n]->force_insert(lite_cache_entry(v, 0, bytes[v]), 0, &host_evicted));
        for (const FactId h : host_evicted) {
          disk[n]->force_insert(lite_cache_entry(h, 0, bytes[h]), 0, nullptr);
        }
      }
    }
  }
  std::vector<std::vector<FactId>> held;
  for (const auto* tiers : {&gpu, &host, &disk}) {
    for (const auto& t : *tiers) {
      auto& ids = held.emplace_back();
      for (FactId f = 0; f < bytes.size(); ++f) {
        if (t->resident(f)) ids.push_back(f);
      }
    }
  }
  return held;
}

}  // namespace

TEST_CASE("tiers given a warm window's users end as after every user's") {
  // 3 facts of 4 MiB a user, so that the window's bound, not a user's size, decides: tiers of
  // 12, 64 and 128 facts. A window short of the bound (sim/warm_window.h) leaves facts out of
  // some tier: with the GPU tier's capacity counted half, the disk tiers differ.
  SyntheticOptions o = population();
  o.facts_per_user = 3;
  o.facts_per_user_spread = 0;
  o.fact_words = 12;
  o.fact_words_sd = 0;
  const std::string tiers =
      "{warm: true, gpu: {capacity: 48MiB, eviction: lru}, host: {capacity: 256MiB, eviction: "
      "lru}, disk: {capacity: 512MiB, eviction: lru, read_gbps: 5, write_gbps: 3}}";
  for (const int per_node : {1, 4}) {
    CAPTURE(per_node);
    const RunConfig run = config(tiers);
    const auto w = warm_window(run, o);
    REQUIRE(w.has_value());
    CHECK(w->first > 0);  // not every user
    const auto full = warm_chain(run, o, per_node, [](std::uint64_t) { return true; });
    const auto windowed =
        warm_chain(run, o, per_node, [&](std::uint64_t u) { return w->inserted(u); });
    REQUIRE(full.size() == windowed.size());
    for (std::size_t t = 0; t < full.size(); ++t) {
      CAPTURE(t);
      CHECK(!full[t].empty());
      CHECK(full[t] == windowed[t]);
    }
  }
}

TEST_CASE("a warm window holds the tiers' capacities of each replica's last users") {
  const RunConfig run = config(
      "{warm: true, gpu: {capacity: 256MiB, eviction: lru}, host: {capacity: 1GiB, eviction: "
      "lru}}");
  const auto w = warm_window(run, population());
  REQUIRE(w.has_value());
  REQUIRE(w->start.size() == 4);
  const std::uint64_t need = run.store.gpu.capacity_bytes + run.store.host.capacity_bytes;
  SyntheticUsers users(population());
  std::vector<std::uint64_t> given(4, 0), inserted(4, 0);
  std::uint64_t inserted_users = 0;
  for (std::uint64_t u = 0; u < 3000; ++u) {
    const int r = w->home.owner(u);
    if (!w->inserted(u)) {
      CHECK(u < w->start[r]);
      continue;
    }
    CHECK(u >= w->first);
    ++inserted_users;
    ++inserted[r];
    for (const auto t : users.static_tokens(u)) {
      given[r] += (t + 15) / 16 * 16 * run.fact_kv_bytes_per_token_per_gpu();
    }
  }
  for (int r = 0; r < 4; ++r) {
    CAPTURE(r);
    CHECK(given[r] >= need);
    CHECK(inserted[r] > 0);
  }
  // A few users a replica, not the population.
  CHECK(inserted_users * 10 < 3000);
}

TEST_CASE("a warm start inserts every user where a tier could keep an older fact") {
  const std::string gpu = "gpu: {capacity: 256MiB, eviction: lru}";
  CHECK(warm_window(config("{warm: true, gpu: {capacity: 256MiB, eviction: s3fifo}}"),
                    population()) == std::nullopt);
  CHECK(warm_window(config("{warm: true, " + gpu +
                           ", host: {capacity: 1GiB, eviction: lru, admission: tinylfu}}"),
                    population()) == std::nullopt);
  CHECK(warm_window(config("{warm: true, " + gpu +
                           ", remote: {capacity: 1TB, eviction: lru, gbps: 10, latency_us: "
                           "10}}"),
                    population()) == std::nullopt);
  CHECK(warm_window(config("{warm: true, " + gpu + "}", "fast_paths: false\n"), population()) ==
        std::nullopt);
  CHECK(warm_window(config("{warm: true, " + gpu + "}"), population()).has_value());
}

TEST_CASE("a warm window of tiers larger than the population holds every user") {
  const auto w = warm_window(
      config("{warm: true, gpu: {capacity: 256MiB, eviction: lru}, host: {capacity: 2TB, "
             "eviction: lru}}"),
      population());
  REQUIRE(w.has_value());
  CHECK(w->first == 0);
  for (std::uint64_t u = 0; u < 3000; ++u) CHECK(w->inserted(u));
}

TEST_CASE("a warm start frees the node ids of the facts its host tier passed on") {
  // 2 MiB facts (one 16-token block): the GPU tier keeps 8,192, the host tier 4,096. A GPU
  // tier under FIFO has no window (sim/warm_window.h): all 60,000 facts are inserted, about
  // 52,000 go through the host tier. Its node frees the ids of those it passed on as it goes,
  // as during a run: it holds at most the 4,096 its tier holds and as many again (at least
  // 4,096) taken since the last sweep.
  const auto dir = temp_dir("warm_node_ids");
  const std::string yaml =
      "experiment: w\nseed: 3\nmodel: llama-3.1-8b\ngpu: h200\n"
      "trace: {generate: {users: 3000, requests: 20, facts_per_user: 20, fact_words: 12, "
      "fact_words_sd: 0, rate: 10}}\n"
      "serving: {k: 20, mode: kv_inject}\n"
      "store: {warm: true, gpu: {capacity: 16GiB, eviction: fifo}, host: {capacity: 8GiB, "
      "eviction: lru}}\n";
  const RunConfig run = load_experiment(write_text(dir / "exp.yaml", yaml), {}).runs.at(0);
  REQUIRE_FALSE(warm_window(run, population()).has_value());
  SimOutputs out;
  out.progress = false;
  out.compact_ids = 1;
  Simulator sim(
      run, streamed_trace(run, true), [&run](int i) { return make_executor(run, i); }, {}, out);
  const RunSummary s = sim.run();
  CHECK(s.node_resident_facts == 4096);
  CHECK(s.node_id_records <= 3 * 4096);
}
