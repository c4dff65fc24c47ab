// The `fast_paths` switch: off, every behaviour takes the general path (events for every decode
// step, the built-in LRU through the policy interface like a user's policy, the general trace
// parser, one event queue for the whole fleet instead of replicas run in turn). Each run here is
// made both ways and must give a byte-identical requests.csv and the same summary.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "sim/config/experiment.h"
#include "sim/runner.h"
#include "tests/catch.h"
#include "tests/sim/same_run.h"
#include "tests/sim/sim_test_util.h"
#include "traces/error.h"

using namespace inferscale;
using namespace inferscale::test;

namespace {

/// Runs `yaml` with the fast paths on and off; returns the summary of the run with them on.
RunSummary check_both_ways(const std::string& name, const std::string& yaml) {
  INFO(yaml);
  const auto dir = temp_dir("fast_paths_" + name);
  std::vector<RunOutcome> outcomes;
  for (const char* on : {"true", "false"}) {
    const auto exp =
        load_experiment(write_text(dir / "exp.yaml", yaml), {std::string("fast_paths=") + on});
    RunnerOptions opts;
    opts.out_dir = (dir / (std::string("results_") + on)).string();
    opts.progress = false;
    auto o = run_experiment(exp, opts);
    REQUIRE(o.size() == 1);
    CHECK(o[0].config.fast_paths == (on[0] == 't'));
    outcomes.push_back(std::move(o[0]));
  }
  const auto& fast = outcomes[0];
  const auto& general = outcomes[1];
  CHECK(general.summary.fused_steps == 0);
  CHECK(general.summary.windows == 0);
  CHECK(fast.summary.requests > 0);
  CHECK(read_text(std::filesystem::path(fast.dir) / "requests.csv") ==
        read_text(std::filesystem::path(general.dir) / "requests.csv"));
  check_same_summary(fast.summary, general.summary);
  // And what the tiers and links did, as summary.json has it (a warm start's share left out).
  const auto written = [](const RunOutcome& o) {
    return nlohmann::json::parse(read_text(std::filesystem::path(o.dir) / "summary.json"));
  };
  const auto fast_json = written(fast), general_json = written(general);
  CHECK(fast_json.at("tiers") == general_json.at("tiers"));
  CHECK(fast_json.at("links") == general_json.at("links"));
  std::filesystem::remove_all(dir);
  return fast.summary;
}

std::string experiment(const std::string& generate, const std::string& rest) {
  return "experiment: e\nseed: 5\nmodel: llama-3.1-8b\ngpu: h200\n"
         "trace: {generate: {" +
         generate +
         "}}\n"
         "serving: {k: 20, mode: kv_inject}\n"
         "output: {requests_csv: true}\n" +
         rest;
}

}  // namespace

TEST_CASE("fast paths: one replica, LRU at a small capacity (the direct tier path)") {
  check_both_ways("lru1",
                  experiment("users: 30, requests: 1500, k: 20, arrival: poisson, rate: 40",
                             "store: {warm: false, gpu: {capacity: 64MiB, eviction: lru}}\n"));
}

TEST_CASE("fast paths: eight replicas by user affinity (fused decode steps)") {
  const RunSummary fast = check_both_ways(
      "fleet", experiment("users: 80, requests: 3000, k: 20, arrival: poisson, rate: 30",
                          "replicas: 8\nrouter: user_affinity\n"
                          "store: {gpu: {capacity: 128MiB, eviction: lru}}\n"));
  CHECK(fast.fused_steps > 0);  // the switch on does take the fused path here
  CHECK(fast.windows > 1);      // and runs the replicas in turn, window by window
}

TEST_CASE("fast paths: replicas in turn write rows of equal times in one queue's order") {
  // Arrivals in groups of 8 at one instant, equal requests: the replicas run in lockstep, and
  // rows of equal finish times come from several replicas, ordered by step chains that tie far
  // back. Windows of 512 requests (128 a replica).
  const auto dir = temp_dir("fast_paths_ties_trace");
  std::string csv = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
  for (int i = 0; i < 2400; ++i) {
    const int s = i / 8;
    char line[64];
    std::snprintf(line, sizeof line, "2023-11-16 18:%02d:%02d.0000000,100,30\n", 15 + s / 60,
                  s % 60);
    csv += line;
  }
  const auto replay = write_text(dir / "ties.csv", csv);
  const std::string yaml =
      "experiment: e\nseed: 3\nmodel: llama-3.1-8b\ngpu: h200\nreplicas: 4\n"
      "router: user_affinity\nserving: {mode: kv_inject, k: 1, header_tokens: 0}\n"
      "store: {gpu: {capacity: 2%, eviction: lru}, host: {capacity: 8GB, eviction: lru}}\n"
      "output: {requests_csv: true}\n"
      "trace: {generate: {users: 40, requests: 2400, k: 1, facts_per_user: 1, "
      "facts_per_user_spread: 0, replay: " +
      replay + "}}\n";
  const RunSummary fast = check_both_ways("ties", yaml);
  CHECK(fast.windows > 1);
  // The ties are there: finish times that rows of two replicas share.
  const auto outs = load_experiment(write_text(dir / "exp.yaml", yaml), {});
  RunnerOptions opts;
  opts.out_dir = (dir / "results").string();
  opts.progress = false;
  const auto o = run_experiment(outs, opts);
  std::map<std::string, std::set<std::string>> replicas_at;  // finish -> replicas
  std::istringstream rows(read_text(std::filesystem::path(o.at(0).dir) / "requests.csv"));
  std::string row;
  std::getline(rows, row);  // header
  while (std::getline(rows, row)) {
    std::vector<std::string> cols;
    std::istringstream fields(row);
    for (std::string c; std::getline(fields, c, ',');) cols.push_back(c);
    replicas_at[cols.at(5)].insert(cols.at(2));
  }
  const auto shared = std::count_if(replicas_at.begin(), replicas_at.end(),
                                    [](const auto& t) { return t.second.size() > 1; });
  CHECK(shared > 10);
  std::filesystem::remove_all(dir);
}

TEST_CASE("fast paths: a host tier, memory writes during the run, and FIFO") {
  check_both_ways("host", experiment("users: 20, requests: 800, k: 20, arrival: poisson, rate: 20,"
                                     " live_sessions: 3",
                                     "store: {gpu: {capacity: 48MiB, eviction: lru},"
                                     " host: {capacity: 256MiB, eviction: lru}}\n"));
  check_both_ways("fifo", experiment("users: 20, requests: 800, k: 20, arrival: poisson, rate: 20",
                                     "store: {gpu: {capacity: 48MiB, eviction: fifo}}\n"));
}

TEST_CASE("fast paths: the key takes a boolean") {
  const auto dir = temp_dir("fast_paths_key");
  const auto file = write_text(dir / "exp.yaml", experiment("users: 2, requests: 4", ""));
  CHECK(load_experiment(file, {}).runs[0].fast_paths);
  CHECK_FALSE(load_experiment(file, {"fast_paths=false"}).runs[0].fast_paths);
  std::string error;
  try {
    load_experiment(file, {"fast_paths=sometimes"});
  } catch (const InputError& e) {
    error = e.what();
  }
  CHECK(error.find("fast_paths") != std::string::npos);
}

TEST_CASE("fast paths: a warm start that inserts only its window's users ends as a full one") {
  // About 20 facts a user of 4 MiB each (two 16-token blocks): the GPU tiers hold 12 facts, the
  // host tier 64: the window is a few users a replica of 1,500 (sim/warm_window.h). Off, every
  // user's facts are inserted.
  const std::string users =
      "users: 1500, requests: 1500, k: 20, facts_per_user: 20, arrival: poisson, rate: 40";
  const std::string host = "host: {capacity: 256MiB, eviction: lru}";
  const std::string tiers = "gpu: {capacity: 48MiB, eviction: lru}, " + host;
  check_both_ways("warm_node",
                  experiment(users,
                             "node: hgx-h200-8\nrouter: least_loaded\n"
                             "store: {warm: true, " +
                                 tiers + ", disk: {capacity: 512MiB, eviction: lru}}\n"));
  // Four replicas by user affinity: run in turn, window by window, memory writes among them.
  CHECK(
      check_both_ways("warm_through",
                      experiment(users + ", live_sessions: 2",
                                 "replicas: 4\nstore: {warm: true, " + host +
                                     ", gpu: {capacity: 48MiB, eviction: lru, write: through}}\n"))
          .windows > 1);
  check_both_ways(
      "warm_direct",
      experiment(users, "store: {warm: true, gpu: {capacity: 48MiB, eviction: lru}}\n"));
  check_both_ways("warm_closed",
                  experiment("users: 1500, requests: 1500, k: 20, facts_per_user: 20, "
                             "arrival: closed_loop, concurrency: 16",
                             "replicas: 2\nstore: {warm: true, " + tiers + "}\n"));
}
