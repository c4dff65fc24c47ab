// The capacity planner: an answer worked out by hand, the probe cache, early stops, agreement
// with direct runs, and the errors of a bad plan file.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "plan/plan_config.h"
#include "plan/planner.h"
#include "plan/report.h"
#include "sim/config/experiment.h"
#include "sim/runner.h"
#include "tests/catch.h"
#include "tests/file_size_limit.h"
#include "tests/traces/locomo_fixture.h"
#include "traces/arrival_replay.h"
#include "traces/error.h"
#include "traces/reader.h"
#include "traces/scaled_trace.h"
#include "traces/synthetic.h"

namespace fs = std::filesystem;
using namespace inferscale;
using namespace inferscale::plan;

namespace {

fs::path temp_dir(const std::string& name) {
  auto p = fs::temp_directory_path() / ("inferscale_plan_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

std::string write_text(const fs::path& p, const std::string& body) {
  std::ofstream(p) << body;
  return p.string();
}

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

/// Identical requests (no facts, fixed query and output lengths), one at a time per replica,
/// dealt round robin.
const char* kFixedBase = R"(
base:
  experiment: fixed
  seed: 3
  trace: {generate: {users: 50, requests: 1, k: 1, query_words: 10, query_words_sd: 0,
                     output_tokens: 20, facts_per_user: 1, facts_per_user_spread: 0}}
  model: llama-3.1-8b
  gpu: h200
  router: round_robin
  scheduler: {max_seqs: 1}
  serving: {mode: text, k: 0, header_tokens: 0}
)";

/// A small LoCoMo-shaped population; 5 GPUs x 2 modes x 2 store sizes = 20 candidates.
std::string twenty_candidates(bool prune) {
  return std::string(R"(
plan: twenty
base:
  experiment: twenty
  seed: 5
  trace: {generate: {users: 2000, requests: 1, k: 20}}
  model: llama-3.1-8b
  serving: {k: 20}
  store: {gpu: {capacity: 10%}}
load: {users: 2000, rate_per_s: 30}
slo:
  ttft_ms: {p99: 300}
  tpot_ms: {p99: 40}
search:
  gpu: [a100-80g, l40s, h100, h200, b200]
  serving.mode: [text, kv_inject]
  store.gpu.capacity: [5%, 20%]
probe: {warmup_s: 4, window_s: 12, cooldown_s: 1}
options: {headroom_steps: 1, prune: )") +
         (prune ? "true" : "false") + "}\n";
}

struct Ran {
  PlanOutcome outcome;
  std::string plan_csv;
};

Ran plan_into(const PlanConfig& p, const fs::path& out, unsigned jobs, bool resume) {
  PlanConfig plan = p;
  plan.out_dir = out.string();
  ProbeCache cache(out / plan.name / "cache");
  auto runner = make_local_runner(jobs);
  PlanOptions opts;
  opts.jobs = jobs;
  opts.resume = resume;
  opts.quiet = true;
  Ran r{run_plan(plan, opts, *runner, cache), ""};
  write_plan_files(plan, r.outcome, plan.load.users, out / plan.name);
  r.plan_csv = read_text(out / plan.name / "plan.csv");
  return r;
}

std::size_t files_in(const fs::path& dir) {
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.path().extension() == ".json";
  return n;
}

/// Whether a direct run of `cfg` meets the plan's SLOs over the plan's window, from its
/// requests.csv (arrival, ttft, tpot, e2e in ms), nearest rank as summary.json.
bool direct_run_passes(const PlanConfig& p, const Candidate& c, std::uint32_t replicas,
                       const fs::path& out) {
  auto sets = c.sets;
  for (const auto& s : probe_overrides(p, p.load.users, 1.0, replicas)) sets.push_back(s);
  sets.push_back("output.requests_csv=true");
  ExperimentConfig exp = load_experiment(p.base, p.base_file, sets);
  exp.name = "direct";
  RunnerOptions opts;
  opts.out_dir = out.string();
  opts.progress = false;
  opts.only_runs = {c.run};
  const auto outcomes = run_experiment(exp, opts);
  std::ifstream f(fs::path(outcomes.at(0).dir) / "requests.csv");
  std::string line;
  std::getline(f, line);
  std::vector<std::string> head;
  {
    std::stringstream ss(line);
    for (std::string h; std::getline(ss, h, ',');) head.push_back(h);
  }
  auto col = [&](const std::string& name) {
    return std::size_t(std::find(head.begin(), head.end(), name) - head.begin());
  };
  const auto arrival = col("arrival"), ttft = col("ttft"), tpot = col("tpot"), e2e = col("e2e");
  REQUIRE(e2e < head.size());
  std::vector<double> v[3];
  while (std::getline(f, line)) {
    std::vector<std::string> x;
    std::stringstream ss(line);
    for (std::string h; std::getline(ss, h, ',');) x.push_back(h);
    const double a = std::stod(x[arrival]);
    if (a < p.probe.warmup_s * 1e3 || a >= (p.probe.warmup_s + p.probe.window_s) * 1e3) continue;
    v[0].push_back(std::stod(x[ttft]));
    v[1].push_back(std::stod(x[tpot]));
    v[2].push_back(std::stod(x[e2e]));
  }
  for (const auto& s : p.slo) {
    auto& values = v[s.metric == "ttft" ? 0 : s.metric == "tpot" ? 1 : 2];
    std::sort(values.begin(), values.end());
    const auto i = std::size_t(std::ceil(s.share * double(values.size()))) - 1;
    // requests.csv rounds to microseconds: a value within that of the bound decides nothing.
    REQUIRE(std::abs(values[i] - s.max_ms) > 1e-3);
    if (values[i] > s.max_ms) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("plan: deterministic arrivals and service give the computed ceiling", "[plan]") {
  const auto dir = temp_dir("fixed");
  // The service time S of one request alone, measured on a one-request run.
  const auto exp_file =
      write_text(dir / "one.yaml", std::string(kFixedBase).substr(std::string("\nbase:\n").size()));
  const ExperimentConfig one = load_experiment(exp_file, {});
  RunnerOptions ro;
  ro.out_dir = (dir / "one").string();
  ro.progress = false;
  const auto ran = run_experiment(one, ro);
  const double service_s = ran.at(0).summary.e2e_ms.max / 1e3;
  REQUIRE(service_s > 0);
  // Arrivals every 1/rate seconds, round robin: a replica gets one every R/rate seconds and
  // keeps up iff R/rate >= S, so the fewest replicas is ceil(rate x S) = ceil(3.4) = 4.
  const double rate = 3.4 / service_s;
  char load[160];
  std::snprintf(load, sizeof load, "load: {users: 50, rate_per_s: %.17g, arrival: gamma, cv: 0}\n",
                rate);
  const auto plan_file =
      write_text(dir / "fixed.yaml",
                 std::string("plan: fixed\n") + kFixedBase + load +
                     "slo: {ttft_ms: {p99: " + std::to_string(2 * service_s * 1e3) + "}}\n" +
                     "search: {gpu: [h200]}\n"
                     "probe: {warmup_s: 2, window_s: 20, cooldown_s: 1}\n"
                     "options: {headroom_steps: 0}\n");
  const auto r = plan_into(load_plan(plan_file), dir / "out", 1, false);
  REQUIRE(r.outcome.results.size() == 1);
  const auto& res = r.outcome.results[0];
  REQUIRE(res.status == Status::kOk);
  CHECK(res.replicas == std::uint32_t(std::ceil(rate * service_s)));
  CHECK(res.replicas == 4);
  // The answer minus one was probed and failed.
  bool below_failed = false;
  for (const auto& pr : r.outcome.probes) {
    if (pr.spec.replicas == 3) below_failed = !pr.result.pass;
  }
  CHECK(below_failed);
  fs::remove_all(dir);
}

TEST_CASE("plan: resume reuses every cached probe, results do not depend on jobs", "[plan]") {
  const auto dir = temp_dir("resume");
  const auto plan = load_plan(write_text(dir / "twenty.yaml", twenty_candidates(true)));
  const auto first = plan_into(plan, dir / "a", 2, false);
  const auto cache_dir = dir / "a" / "twenty" / "cache";
  const std::size_t entries = files_in(cache_dir);
  REQUIRE(entries == first.outcome.probes_run);
  REQUIRE(entries > 10);

  // All cached: nothing runs, and plan.csv is byte-identical (on one worker this time).
  const auto again = plan_into(plan, dir / "a", 1, true);
  CHECK(again.outcome.probes_run == 0);
  CHECK(again.outcome.probes_cached == again.outcome.probes.size());
  CHECK(again.outcome.probes.size() == first.outcome.probes.size());
  CHECK(again.plan_csv == first.plan_csv);

  // An interrupted plan: a third of its entries never written. Only those run again.
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(cache_dir)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::size_t removed = 0;
  for (std::size_t i = 0; i < files.size(); i += 3, ++removed) fs::remove(files[i]);
  write_text(cache_dir / "0123.json.tmp.1.2", "{\"half\": ");  // a write cut short
  const auto resumed = plan_into(plan, dir / "a", 2, true);
  CHECK(resumed.outcome.probes_run == removed);
  CHECK(resumed.plan_csv == first.plan_csv);
  CHECK(!fs::exists(cache_dir / "0123.json.tmp.1.2"));

  // Without the cache, on one worker: the same plan.
  const auto serial = plan_into(plan, dir / "b", 1, false);
  CHECK(serial.plan_csv == first.plan_csv);
  fs::remove_all(dir);
}

TEST_CASE("plan: early stops never change a probe's outcome", "[plan]") {
  const auto dir = temp_dir("early");
  auto plan = load_plan(write_text(dir / "twenty.yaml", twenty_candidates(false)));
  REQUIRE(plan.probe.early_stop);
  const auto with = plan_into(plan, dir / "on", 2, false);
  plan.probe.early_stop = false;
  const auto without = plan_into(plan, dir / "off", 2, false);
  CHECK(with.outcome.probes_stopped_early > 0);
  CHECK(without.outcome.probes_stopped_early == 0);
  REQUIRE(with.outcome.probes.size() == without.outcome.probes.size());
  for (std::size_t i = 0; i < with.outcome.probes.size(); ++i) {
    const auto &a = with.outcome.probes[i], &b = without.outcome.probes[i];
    CHECK(a.spec.candidate == b.spec.candidate);
    CHECK(a.spec.replicas == b.spec.replicas);
    CHECK(a.result.pass == b.result.pass);
  }
  CHECK(with.plan_csv == without.plan_csv);
  fs::remove_all(dir);
}

TEST_CASE("plan: answers agree with direct runs at the answer and one replica fewer", "[plan]") {
  const auto dir = temp_dir("direct");
  const auto plan = load_plan(write_text(dir / "twenty.yaml", twenty_candidates(false)));
  const auto r = plan_into(plan, dir / "out", 2, false);
  REQUIRE(r.outcome.candidates.size() == 20);
  std::size_t checked_below = 0;
  for (std::size_t i = 0; i < r.outcome.candidates.size(); ++i) {
    const auto& res = r.outcome.results[i];
    const auto& c = r.outcome.candidates[i];
    INFO(c.label);
    REQUIRE(res.status == Status::kOk);
    CHECK(direct_run_passes(plan, c, res.replicas, dir / "direct"));
    if (res.replicas > 1) {
      CHECK_FALSE(direct_run_passes(plan, c, res.replicas - 1, dir / "direct"));
      ++checked_below;
    }
  }
  CHECK(checked_below > 0);  // some candidate needs more than one replica
  fs::remove_all(dir);
}

TEST_CASE("plan: a bad plan file is an error at its position", "[plan]") {
  const auto dir = temp_dir("bad");
  const std::string head =
      "plan: bad\n"
      "base: {trace: {generate: {users: 10, requests: 1}}}\n"
      "load: {users: 10, rate_per_s: 1}\n";
  struct Case {
    std::string body, where, what;
  };
  const std::vector<Case> cases{
      {head + "slo: {ttft_ms: {p99: 500}}\nsearch:\n  serving.nope: [1, 2]\n", ":6:18",
       "unknown key 'nope'"},
      {head + "slo: {ttft_ms: {p99: 500}, itl_ms: {p99: 20}}\nsearch: {gpu: [h100]}\n",
       ":4:", "unknown SLO metric 'itl_ms'"},
      {head + "slo: {ttft_ms: {p99: 500}}\nsearch: {}\n", ":5:", "empty search space"},
      {head + "slo: {ttft_ms: {p99: 500}}\nsearch: {gpu: []}\n", ":5:", "empty search space"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto file = write_text(dir / ("bad" + std::to_string(i) + ".yaml"), cases[i].body);
    INFO(cases[i].body);
    try {
      load_plan(file);
      FAIL("no error");
    } catch (const InputError& e) {
      CHECK(e.where().find(file + cases[i].where) == 0);
      CHECK(std::string(e.what()).find(cases[i].what) != std::string::npos);
    }
    // The command: status 2, the position on stderr, no results folder.
    const std::string cmd = std::string(INFERSCALE_BINARY_DIR) + "/inferscale plan " + file +
                            " --out " + (dir / "results").string() + " 2> " +
                            (dir / "err.txt").string();
    const int status = std::system(cmd.c_str());
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 2);
    CHECK(read_text(dir / "err.txt").find(file + cases[i].where) != std::string::npos);
    CHECK(!fs::exists(dir / "results"));
    // `inferscale validate` checks a plan file the same way.
    const std::string check = std::string(INFERSCALE_BINARY_DIR) + "/inferscale validate " + file +
                              " 2> " + (dir / "err.txt").string();
    const int checked = std::system(check.c_str());
    REQUIRE(WIFEXITED(checked));
    CHECK(WEXITSTATUS(checked) == 2);
    CHECK(read_text(dir / "err.txt").find(file + cases[i].where) != std::string::npos);
  }
  // And passes a good one, saying what it would search.
  const auto good = write_text(
      dir / "good.yaml", head +
                             "slo: {ttft_ms: {p99: 500}}\n"
                             "search: {gpu: [h100, h200], serving.mode: [text, kv_inject]}\n");
  const std::string check = std::string(INFERSCALE_BINARY_DIR) + "/inferscale validate " + good +
                            " > " + (dir / "out.txt").string();
  const int status = std::system(check.c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(read_text(dir / "out.txt").find("plan bad: ok (10 users") == 0);
  CHECK(read_text(dir / "out.txt").find("4 candidates over 2 search keys") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("plan: replayed arrivals keep the trace's times and token counts", "[plan]") {
  const std::string csv =
      std::string(INFERSCALE_SOURCE_DIR) + "/tests/plan/data/arrivals_azure_layout.csv";
  const auto rows = read_arrival_csv(csv);
  REQUIRE(rows.size() == 600);
  CHECK(rows[0].time_ns == 0);
  CHECK(rows[0].context_tokens == 306);
  CHECK(rows[0].generated_tokens == 114);
  CHECK(rows[1].time_ns == 103191900);  // 18:15:46.1272788 - 18:15:46.0240869
  SyntheticOptions o;
  o.users = 40;
  o.requests = 1000;  // more than the rows: the replay ends the trace
  o.k = 5;
  o.replay = std::make_shared<const std::vector<ReplayedRequest>>(rows);
  o.replay_speedup = 2;
  SyntheticStream stream(o, true);
  TraceRecord rec;
  std::size_t i = 0;
  while (stream.next(rec)) {
    if (rec.kind != RecordKind::kRequest) continue;
    REQUIRE(i < rows.size());
    CHECK(rec.request.time == SimTime(std::llround(double(rows[i].time_ns) / 2)));
    CHECK(rec.request.query_tokens == rows[i].context_tokens);
    CHECK(rec.request.output_tokens == rows[i].generated_tokens);
    CHECK(rec.request.facts.size() == 5);
    ++i;
  }
  CHECK(i == rows.size());

  // A plan sized on the replay: it runs, and an out-of-order row is an error at its line.
  const auto dir = temp_dir("replay");
  const auto plan_file =
      write_text(dir / "replay.yaml",
                 "plan: replay\n"
                 "base: {trace: {generate: {users: 200, requests: 1, k: 10}}, serving: {k: 10}}\n"
                 "load: {users: 200, replay: " +
                     csv +
                     "}\n"
                     "slo: {ttft_ms: {p99: 400}}\n"
                     "search: {gpu: [h100, l40s]}\n"
                     "probe: {warmup_s: 5, window_s: 30, cooldown_s: 1}\n");
  const auto r = plan_into(load_plan(plan_file), dir / "out", 2, false);
  REQUIRE(r.outcome.results.size() == 2);
  CHECK(r.outcome.results[0].status == Status::kOk);
  CHECK(r.outcome.probes.at(0).result.measured > 0);
  std::string bad = read_text(csv);
  const auto second = bad.find('\n', bad.find('\n') + 1) + 1;  // row 2 before row 1
  bad.replace(second, 13, "2023-11-15 18");
  write_text(dir / "bad.csv", bad);
  try {
    read_arrival_csv((dir / "bad.csv").string());
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.where() == (dir / "bad.csv").string() + ":3");
  }
  fs::remove_all(dir);
}

TEST_CASE("plan: a range in the search space lists its values", "[plan]") {
  const auto dir = temp_dir("range");
  const auto file = write_text(dir / "range.yaml",
                               "plan: range\n"
                               "base: {trace: {generate: {users: 10, requests: 1}}}\n"
                               "load: {users: 10, rate_per_s: 1}\n"
                               "slo: {ttft_ms: {p99: 500}}\n"
                               "search:\n"
                               "  store.gpu.capacity: {from: 10, to: 40, step: 15, unit: \"%\"}\n"
                               "  serving.k: {from: 5, to: 5}\n");
  const auto p = load_plan(file);
  REQUIRE(p.axes.size() == 2);
  CHECK(p.axes[0].values == std::vector<std::string>{"10%", "25%", "40%"});
  CHECK(p.axes[1].values == std::vector<std::string>{"5"});
  fs::remove_all(dir);
}

TEST_CASE("plan: a probe cached by another simulator results version is not reused", "[plan]") {
  const auto dir = temp_dir("version");
  const auto file = write_text(dir / "v.yaml", std::string("plan: v\n") + kFixedBase +
                                                   "load: {users: 50, rate_per_s: 8}\n"
                                                   "slo: {ttft_ms: {p99: 500}}\n"
                                                   "search: {gpu: [h100, h200]}\n"
                                                   "probe: {warmup_s: 1, window_s: 4}\n");
  auto plan = load_plan(file);
  CHECK(plan.results_version == kResultsVersion);
  const auto first = plan_into(plan, dir / "out", 1, false);
  REQUIRE(first.outcome.probes_run > 0);
  const auto same = plan_into(plan, dir / "out", 1, true);
  CHECK(same.outcome.probes_run == 0);
  // A rebuilt simulator that simulates differently raises the version: every probe runs again.
  plan.results_version = kResultsVersion + 1;
  const auto bumped = plan_into(plan, dir / "out", 1, true);
  CHECK(bumped.outcome.probes_run == first.outcome.probes_run);
  for (std::size_t i = 0; i < bumped.outcome.probes.size(); ++i) {
    CHECK(bumped.outcome.probes[i].key != first.outcome.probes[i].key);
  }
  CHECK(bumped.plan_csv == first.plan_csv);  // the same simulator: the same answers
  fs::remove_all(dir);
}

TEST_CASE("plan: the headroom is a bracket of probed loads at the answer", "[plan]") {
  const auto dir = temp_dir("headroom");
  const auto file = write_text(dir / "h.yaml", std::string("plan: h\n") + kFixedBase +
                                                   "load: {users: 50, rate_per_s: 90, arrival: "
                                                   "gamma, cv: 0}\n"
                                                   "slo: {e2e_ms: {p99: 1500}}\n"
                                                   "search: {gpu: [h200]}\n"
                                                   "probe: {warmup_s: 2, window_s: 20}\n"
                                                   "options: {headroom_steps: 4}\n");
  const auto r = plan_into(load_plan(file), dir / "out", 1, false);
  const auto& res = r.outcome.results.at(0);
  REQUIRE(res.status == Status::kOk);
  REQUIRE(res.headroom_lower >= 1);
  // headroom_lower: a load found to pass at the answer; headroom_upper: the lowest found to fail.
  double passed = 1, failed = 0;
  for (const auto& p : r.outcome.probes) {
    if (p.spec.replicas != res.replicas || p.spec.load_factor == 1.0) continue;
    if (p.result.pass) passed = std::max(passed, p.spec.load_factor);
    if (!p.result.pass && (failed == 0 || p.spec.load_factor < failed)) failed = p.spec.load_factor;
  }
  CHECK(res.headroom_lower == passed);
  CHECK(res.headroom_upper == failed);
  if (failed > 0) CHECK(res.headroom_lower < res.headroom_upper);
  CHECK(res.users_per_gpu_capacity == Approx(50 * res.headroom_lower / res.gpus));
  const auto csv = r.plan_csv;
  CHECK(csv.find(",headroom_lower,headroom_upper,") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("plan: a candidate's cost is summary.json's cost_usd of a run at the answer", "[plan]") {
  const auto dir = temp_dir("cost");
  // Nodes of 4 L40S (billed whole) with a host tier (priced by capacity per node), and the
  // plan's own GPU price.
  const auto file = write_text(dir / "cost.yaml",
                               "plan: cost\n"
                               "base:\n"
                               "  experiment: cost\n"
                               "  seed: 4\n"
                               "  trace: {generate: {users: 500, requests: 1, k: 10}}\n"
                               "  model: llama-3.1-8b\n"
                               "  node: l40s-4\n"
                               "  serving: {mode: kv_inject, k: 10}\n"
                               "  store: {gpu: {capacity: 10%}, host: {capacity: 100GB}}\n"
                               "load: {users: 500, rate_per_s: 40}\n"
                               "slo: {ttft_ms: {p99: 300}}\n"
                               "search: {gpu: [l40s]}\n"
                               "prices: {l40s: 1.75}\n"
                               "probe: {warmup_s: 2, window_s: 6, cooldown_s: 1}\n"
                               "options: {headroom_steps: 0}\n");
  const auto plan = load_plan(file);
  const auto r = plan_into(plan, dir / "out", 2, false);
  const auto& res = r.outcome.results.at(0);
  const auto& c = r.outcome.candidates.at(0);
  REQUIRE(res.status == Status::kOk);
  auto sets = c.sets;
  for (const auto& s : probe_overrides(plan, plan.load.users, 1.0, res.replicas)) sets.push_back(s);
  sets.push_back("prices.gpu_per_hour=1.75");
  ExperimentConfig exp = load_experiment(plan.base, plan.base_file, sets);
  RunnerOptions ro;
  ro.out_dir = (dir / "direct").string();
  ro.progress = false;
  const auto ran = run_experiment(exp, ro);
  const auto summary = nlohmann::json::parse(summary_json(ran.at(0).config, ran.at(0).summary));
  const auto& cost = summary.at("cost_usd");
  CHECK(cost.at("gpus").get<std::uint64_t>() == res.gpus);
  CHECK(res.gpus % 4 == 0);  // whole nodes
  CHECK(cost.at("tiers").at("host").at("per_hour").get<double>() > 0);
  CHECK(cost.at("per_hour").get<double>() == Approx(res.cost_per_hour).epsilon(1e-12));
  CHECK(res.cost_per_hour > double(res.gpus) * 1.75);  // the host tier is in the price
  fs::remove_all(dir);
}

namespace {

/// The records of a trace file, by kind.
struct ReadBack {
  std::vector<FactRecord> facts;
  std::vector<RequestRecord> requests;
};

ReadBack read_back(const fs::path& p) {
  ReadBack out;
  TraceReader reader(p.string());
  TraceRecord rec;
  while (reader.next(rec)) {
    if (rec.kind == RecordKind::kRequest) out.requests.push_back(rec.request);
    if (rec.kind == RecordKind::kFact) out.facts.push_back(rec.fact);
    REQUIRE(rec.kind != RecordKind::kMemoryWrite);  // every fact known from the start
  }
  return out;
}

/// The scaled trace a probe of `p` at `factor` runs on (the path its overrides name).
fs::path scaled_trace_of(const PlanConfig& p, double factor) {
  for (const auto& s : probe_overrides(p, p.load.users, factor, 1)) {
    if (s.rfind("trace=", 0) == 0) return s.substr(6);
  }
  FAIL("no trace override");
  return {};
}

}  // namespace

TEST_CASE("plan: a trace file is re-sized to the users and re-timed to the rate", "[plan]") {
  const auto dir = temp_dir("file");
  // Source: 3 users (9, 1, 7 in file order), 6 facts, 5 requests.
  write_text(dir / "src.jsonl",
             "{\"type\":\"header\",\"version\":1,\"source\":\"test\"}\n"
             "{\"type\":\"fact\",\"id\":10,\"user\":9,\"tokens\":12}\n"
             "{\"type\":\"fact\",\"id\":11,\"user\":9,\"tokens\":20}\n"
             "{\"type\":\"fact\",\"id\":20,\"user\":1,\"tokens\":8}\n"
             "{\"type\":\"fact\",\"id\":30,\"user\":7,\"tokens\":16}\n"
             "{\"type\":\"request\",\"id\":1,\"user\":9,\"time\":0,\"query_tokens\":9,"
             "\"output_tokens\":4,\"facts\":[11,10]}\n"
             "{\"type\":\"memory_write\",\"id\":21,\"user\":1,\"tokens\":24,\"time\":5}\n"
             "{\"type\":\"memory_write\",\"id\":31,\"user\":7,\"tokens\":4,\"time\":6}\n"
             "{\"type\":\"request\",\"id\":2,\"user\":1,\"time\":7,\"query_tokens\":7,"
             "\"output_tokens\":6,\"facts\":[21,20]}\n"
             "{\"type\":\"request\",\"id\":3,\"user\":7,\"time\":8,\"query_tokens\":5,"
             "\"output_tokens\":3,\"facts\":[31]}\n"
             "{\"type\":\"request\",\"id\":4,\"user\":9,\"time\":9,\"query_tokens\":11,"
             "\"output_tokens\":5,\"facts\":[10]}\n"
             "{\"type\":\"request\",\"id\":5,\"user\":7,\"time\":9,\"query_tokens\":6,"
             "\"output_tokens\":2,\"facts\":[30,31]}\n");
  const auto file = write_text(dir / "p.yaml",
                               "plan: p\n"
                               "base: {seed: 2, trace: {generate: {users: 10, requests: 1}},"
                               " serving: {mode: kv_inject, k: 4}}\n"
                               "load: {users: 30, rate_per_s: 5, arrival: gamma, cv: 0,"
                               " trace: file, trace_file: src.jsonl}\n"
                               "slo: {ttft_ms: {p99: 500}}\n"
                               "search: {gpu: [h100]}\n"
                               "probe: {warmup_s: 2, window_s: 8, cooldown_s: 1}\n");
  auto plan = load_plan(file);
  plan.out_dir = (dir / "out").string();
  REQUIRE(plan.load.source);
  CHECK(plan.load.source->users() == 3);
  const auto t = read_back(scaled_trace_of(plan, 1.0));
  // 5 requests/s over 11 s: 55 requests, gaps of exactly 0.2 s (cv 0).
  REQUIRE(t.requests.size() == 55);
  REQUIRE(t.requests.size() == probe_requests(plan, 30, 1.0));
  const std::uint32_t src_query[5] = {9, 7, 5, 11, 6};
  std::map<UserId, std::uint32_t> fact_owner_tokens;
  std::set<UserId> users;
  for (std::size_t i = 0; i < t.requests.size(); ++i) {
    const auto& r = t.requests[i];
    CHECK(r.time == SimTime(std::llround(double(i + 1) * 0.2e9)));
    CHECK(r.query_tokens == src_query[i % 5]);  // source request i mod 5
    CHECK(r.user < 30);
    // Its user is a copy of the source request's user (dense: 9 -> 0, 1 -> 1, 7 -> 2).
    const UserId src_user[5] = {0, 1, 2, 0, 2};
    CHECK(r.user % 3 == src_user[i % 5]);
    users.insert(r.user);
  }
  CHECK(users.size() > 3);  // spread over the population, not the source's three users
  // Every requested fact is written, at t=0, owned by the requester.
  std::map<FactId, UserId> owner;
  for (const auto& f : t.facts) {
    CHECK(f.time == 0);
    owner[f.id] = f.user;
  }
  for (const auto& r : t.requests) {
    for (const auto f : r.facts) {
      REQUIRE(owner.count(f) == 1);
      CHECK(owner[f] == r.user);
    }
  }
  // Twice the load: twice the requests, half the gaps.
  const auto t2 = read_back(scaled_trace_of(plan, 2.0));
  CHECK(t2.requests.size() == 110);
  CHECK(t2.requests.at(0).time == SimTime(1e8));
  // The plan runs on it.
  const auto r = plan_into(plan, dir / "out", 1, false);
  CHECK(r.outcome.results.at(0).status == Status::kOk);
  CHECK(r.outcome.probes.at(0).result.measured > 0);
  fs::remove_all(dir);
}

TEST_CASE("plan: a re-sized trace that does not fit takes the folders made for it", "[plan]") {
  // The re-sized trace is the plan's first write, to <out>/<plan>/.traces/: a trace that
  // cannot be written must not leave those folders behind. A file-size limit on this process
  // stands for a full disk (EFBIG in place of ENOSPC).
  const auto dir = temp_dir("does_not_fit");
  write_text(dir / "src.jsonl",
             "{\"type\":\"fact\",\"id\":10,\"user\":9,\"tokens\":12}\n"
             "{\"type\":\"request\",\"id\":1,\"user\":9,\"time\":0,\"query_tokens\":9,"
             "\"output_tokens\":4,\"facts\":[10]}\n");
  const auto file = write_text(dir / "p.yaml",
                               "plan: p\n"
                               "base: {seed: 2, trace: {generate: {users: 10, requests: 1}},"
                               " serving: {mode: kv_inject, k: 4}}\n"
                               "load: {users: 20000, rate_per_s: 5000,"
                               " trace: file, trace_file: src.jsonl}\n"
                               "slo: {ttft_ms: {p99: 500}}\n"
                               "search: {gpu: [h100]}\n"
                               "probe: {warmup_s: 2, window_s: 8, cooldown_s: 1}\n");
  auto plan = load_plan(file);
  plan.out_dir = (dir / "out" / "deeper").string();
  std::string message;
  {
    test::FileSizeLimit limit(32 << 10);  // 55,000 requests: megabytes
    try {
      probe_overrides(plan, plan.load.users, 1.0, 1);
    } catch (const InputError& e) {
      message = e.what();
    }
  }
  INFO(message);
  CHECK(message.find("write failed: File too large") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "out"));
  fs::remove_all(dir);
}

TEST_CASE("plan: LoCoMo itself, each speaker copied onto the population", "[plan]") {
  const auto dir = temp_dir("locomo");
  fs::create_directories(dir / "locomo");
  write_text(dir / "locomo" / "locomo10.json", test::kTwoConversations);
  const auto file = write_text(dir / "p.yaml",
                               "plan: p\n"
                               "base: {seed: 2, trace: {locomo: {data: " +
                                   (dir / "locomo").string() +
                                   ", k: 3}}, serving: {mode: kv_inject, k: 3}}\n"
                                   "load: {users: 40, rate_per_s: 4, trace: locomo}\n"
                                   "slo: {ttft_ms: {p99: 500}}\n"
                                   "search: {gpu: [h100]}\n"
                                   "probe: {warmup_s: 1, window_s: 4, cooldown_s: 1}\n");
  auto plan = load_plan(file);
  plan.out_dir = (dir / "out").string();
  REQUIRE(plan.load.source);
  CHECK(plan.load.source->users() == 4);  // two conversations x two speakers
  const auto t = read_back(scaled_trace_of(plan, 1.0));
  REQUIRE(t.requests.size() == 24);
  std::set<UserId> users;
  for (const auto& r : t.requests) {
    CHECK(r.user < 40);
    CHECK(r.facts.size() <= 3);
    users.insert(r.user);
  }
  CHECK(users.size() > 4);
  const auto r = plan_into(plan, dir / "out", 1, false);
  CHECK(r.outcome.results.at(0).status == Status::kOk);
  fs::remove_all(dir);
}

std::string source_path(const std::string& rel) {
  return std::string(INFERSCALE_SOURCE_DIR) + "/" + rel;
}

TEST_CASE("plan: errors of the load's trace name the key and exit 2", "[plan]") {
  const auto dir = temp_dir("trace_errors");
  const std::string tail = "slo: {ttft_ms: {p99: 500}}\nsearch: {gpu: [h100]}\n";
  const std::string base = "plan: bad\nbase: {trace: {generate: {users: 10, requests: 1}}}\n";
  struct Case {
    std::string body, where, what;
  };
  const std::vector<Case> cases{
      {base + "load: {users: 10, rate_per_s: 1, trace: file}\n" + tail, ":3:", "needs 'trace_file"},
      {base + "load: {users: 10, rate_per_s: 1, trace: file, trace_file: nope.jsonl}\n" + tail,
       ":3:", "'nope.jsonl' not found"},
      {base + "load: {users: 10, rate_per_s: 1, trace: nope}\n" + tail, ":3:", "nope"},
      {"plan: bad\nbase: {trace: {locomo: {users: 2}}}\nload: {users: 10, rate_per_s: 1}\n" + tail,
       ":3:", "base experiment's trace is not generated"},
      {base + "load: {users: 10, rate_per_s: 1, trace_file: x.jsonl}\n" + tail,
       ":3:", "applies to 'trace: file'"},
      {base + "load: {users: 10, rate_per_s: 1, trace: file, trace_file: " +
           write_text(dir / "empty.jsonl", "{\"type\":\"header\",\"version\":1}\n") + "}\n" + tail,
       ":3:", "no request"},
      {base + "load: {users: 10, rate_per_s: 1, trace: file, trace_file: " +
           source_path("tests/sim/data/golden.jsonl") + "}\n" + tail +
           "probe: {warm_store: true}\n",
       ":6:", "needs 'load.trace: generate'"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto file = write_text(dir / ("bad" + std::to_string(i) + ".yaml"), cases[i].body);
    INFO(cases[i].body);
    try {
      load_plan(file);
      FAIL("no error");
    } catch (const InputError& e) {
      CHECK(e.where().find(file + cases[i].where) == 0);
      CHECK((e.where().find("load.trace") != std::string::npos ||
             e.where().find("probe.warm_store") != std::string::npos));
      CHECK(std::string(e.what()).find(cases[i].what) != std::string::npos);
    }
    const std::string cmd = std::string(INFERSCALE_BINARY_DIR) + "/inferscale plan " + file +
                            " --out " + (dir / "results").string() + " 2> /dev/null";
    const int status = std::system(cmd.c_str());
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 2);
  }
  fs::remove_all(dir);
}
