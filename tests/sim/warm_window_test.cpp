// The warm window (sim/warm_window.h): which users a warm start inserts, and when it must
// insert them all. That the tiers then end as after a full warm start is checked by running
// both (fast_paths_test.cpp).
#include "sim/warm_window.h"

#include "sim/config/experiment.h"
#include "sim/executor_factory.h"
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

}  // namespace

TEST_CASE("a warm window holds three times the tiers' capacities of each replica's last users") {
  const RunConfig run = config(
      "{warm: true, gpu: {capacity: 256MiB, eviction: lru}, host: {capacity: 1GiB, eviction: "
      "lru}}");
  const auto w = warm_window(run, population());
  REQUIRE(w.has_value());
  REQUIRE(w->start.size() == 4);
  const std::uint64_t need = 3 * (run.store.gpu.capacity_bytes + run.store.host.capacity_bytes);
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
  // 2 MiB facts (one 16-token block): the GPU tier keeps 8,192, the host tier 4,096. The
  // window gives the replica 3 x 12,288 facts, of which about 28,000 go through the host tier.
  // Its node frees the ids of those it passed on as it goes, as during a run: it holds at most
  // the 4,096 its tier holds and as many again (at least 4,096) taken since the last sweep.
  const auto dir = temp_dir("warm_node_ids");
  const std::string yaml =
      "experiment: w\nseed: 3\nmodel: llama-3.1-8b\ngpu: h200\n"
      "trace: {generate: {users: 3000, requests: 20, facts_per_user: 20, fact_words: 12, "
      "fact_words_sd: 0, rate: 10}}\n"
      "serving: {k: 20, mode: kv_inject}\n"
      "store: {warm: true, gpu: {capacity: 16GiB, eviction: lru}, host: {capacity: 8GiB, "
      "eviction: lru}}\n";
  const RunConfig run = load_experiment(write_text(dir / "exp.yaml", yaml), {}).runs.at(0);
  SimOutputs out;
  out.progress = false;
  out.compact_ids = 1;
  Simulator sim(
      run, streamed_trace(run, true), [&run](int i) { return make_executor(run, i); }, {}, out);
  const RunSummary s = sim.run();
  CHECK(s.node_resident_facts == 4096);
  CHECK(s.node_id_records <= 3 * 4096);
}
