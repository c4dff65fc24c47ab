// Batch schedulers: the registry, `scheduler.name` and its errors, and what each scheduler
// decides that the others would not.
#include <map>

#include "sim/batch_scheduler.h"
#include "sim/config/experiment.h"
#include "sim/runner.h"
#include "tests/catch.h"
#include "tests/sim/sim_test_util.h"
#include "tests/sim/small_trace.h"
#include "traces/error.h"

using namespace inferscale;
using namespace inferscale::test;

namespace {

std::vector<RunOutcome> run(const std::filesystem::path& dir, const std::string& yaml) {
  const auto exp = load_experiment(write_text(dir / "exp.yaml", yaml), {});
  RunnerOptions opts;
  opts.out_dir = (dir / "results").string();
  opts.progress = false;
  return run_experiment(exp, opts);
}

/// Request 1 (user 1) runs alone (max_seqs 1) and encodes its two facts into the GPU store;
/// meanwhile request 2 (user 2, facts not resident) arrives, then request 3 (user 1, the same
/// facts, resident by then). Both wait until request 1 finishes.
const char* kLocalityTrace =
    "{\"type\":\"header\",\"version\":1,\"source\":\"scheduler_test\"}\n"
    "{\"type\":\"fact\",\"id\":100,\"user\":1,\"tokens\":16}\n"
    "{\"type\":\"fact\",\"id\":101,\"user\":1,\"tokens\":16}\n"
    "{\"type\":\"fact\",\"id\":200,\"user\":2,\"tokens\":16}\n"
    "{\"type\":\"fact\",\"id\":201,\"user\":2,\"tokens\":16}\n"
    "{\"type\":\"request\",\"id\":1,\"user\":1,\"time\":0,\"query_tokens\":8,"
    "\"output_tokens\":3,\"facts\":[100,101]}\n"
    "{\"type\":\"request\",\"id\":2,\"user\":2,\"time\":100000,\"query_tokens\":8,"
    "\"output_tokens\":2,\"facts\":[200,201]}\n"
    "{\"type\":\"request\",\"id\":3,\"user\":1,\"time\":200000,\"query_tokens\":8,"
    "\"output_tokens\":2,\"facts\":[100,101]}\n";

/// requests.csv rows by request id.
std::map<std::string, std::vector<std::string>> rows_by_id(const RunOutcome& o) {
  std::map<std::string, std::vector<std::string>> rows;
  for (auto& row : read_csv(std::filesystem::path(o.dir) / "requests.csv")) rows[row[0]] = row;
  return rows;
}

/// The locality trace under `scheduler` (a YAML flow map's entries after max_seqs).
std::map<std::string, std::vector<std::string>> locality_run(const std::string& name,
                                                             const std::string& scheduler) {
  const auto dir = temp_dir("sched_" + name);
  const auto trace = write_text(dir / "trace.jsonl", kLocalityTrace);
  const auto outcomes =
      run(dir, tiny_config(trace, "scheduler: {max_batch_tokens: 1024, max_seqs: 1" + scheduler +
                                      "}\n"
                                      "serving: {k: 50, header_tokens: 0, footer_tokens: 0}\n"
                                      "store: {warm: false, gpu: {capacity: 64KiB}}\n"));
  REQUIRE(outcomes.size() == 1);
  auto rows = rows_by_id(outcomes[0]);
  REQUIRE(rows.size() == 3);
  return rows;
}

// requests.csv columns
constexpr std::size_t kFirstToken = 4, kGpuHits = 10, kMisses = 12;

}  // namespace

TEST_CASE("both schedulers are registered in a program linked with the simulator") {
  CHECK(SchedulerRegistry::find("continuous") != nullptr);
  CHECK(SchedulerRegistry::find("fact_locality") != nullptr);
  CHECK(SchedulerRegistry::find("no_such") == nullptr);
}

TEST_CASE("scheduler.name omitted selects continuous, with the same results as naming it") {
  const auto dir = temp_dir("sched_default");
  SmallTrace t;
  t.users = 20;
  t.requests = 200;
  const auto trace = small_trace(dir, "trace", t);
  const std::string body = std::string(kStressBody) +
                           "store: {gpu: {capacity: 24KiB, eviction: lru}}\n"
                           "runs:\n  - name: omitted\n"
                           "  - name: named\n    scheduler: {name: continuous}\n";
  const auto outcomes = run(dir, tiny_config(trace, body));
  REQUIRE(outcomes.size() == 2);
  CHECK(outcomes[0].config.scheduler.name == "continuous");
  CHECK(outcomes[1].config.scheduler.name == "continuous");
  const auto a = read_text(std::filesystem::path(outcomes[0].dir) / "requests.csv");
  const auto b = read_text(std::filesystem::path(outcomes[1].dir) / "requests.csv");
  CHECK(a.size() > 200);
  CHECK(a == b);
  // A default run's summary does not name its scheduler (summaries of earlier builds compare).
  const auto summary = read_text(std::filesystem::path(outcomes[0].dir) / "summary.json");
  CHECK(summary.find("\"continuous\"") == std::string::npos);
}

TEST_CASE("an unknown scheduler.name fails with its key path and the known names") {
  const auto dir = temp_dir("sched_unknown");
  const auto trace = write_text(dir / "trace.jsonl", kLocalityTrace);
  const auto yaml = tiny_config(trace, "scheduler: {name: fastest, max_seqs: 4}\n");
  try {
    run(dir, yaml);
    FAIL("no error");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK(what.find("scheduler.name") != std::string::npos);
    CHECK(what.find("unknown scheduler 'fastest'") != std::string::npos);
    CHECK(what.find("known: continuous, fact_locality") != std::string::npos);
  }
  // The command exits with status 2, the message on its output.
  write_text(dir / "cli.yaml", yaml);
  const auto log = dir / "cli.log";
  CHECK(run_cli("run " + (dir / "cli.yaml").string() + " --out " + (dir / "out").string() +
                    " --no-progress",
                log) == 2);
  CHECK(read_text(log).find("known: continuous, fact_locality") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "out" / "t" / "default" / "requests.csv"));
}

TEST_CASE("scheduler parameters are checked by the scheduler they are for") {
  const auto dir = temp_dir("sched_params");
  const auto trace = write_text(dir / "trace.jsonl", kLocalityTrace);
  CHECK_THROWS_AS(run(dir, tiny_config(trace, "scheduler: {params: {window: 4}}\n")), InputError);
  CHECK_THROWS_AS(run(dir, tiny_config(trace, "scheduler: {name: fact_locality, "
                                              "params: {windw: 4}}\n")),
                  InputError);
  CHECK_THROWS_AS(run(dir, tiny_config(trace, "scheduler: {name: fact_locality, "
                                              "params: {window: 0}}\n")),
                  InputError);
}

TEST_CASE("fact_locality admits a waiting request whose facts are resident before an earlier one "
          "whose facts are not") {
  // continuous: first come first served, request 2 before request 3.
  auto fifo = locality_run("fifo", "");
  CHECK(std::stod(fifo["2"][kFirstToken]) < std::stod(fifo["3"][kFirstToken]));

  auto local = locality_run("local", ", name: fact_locality");
  CHECK(std::stod(local["3"][kFirstToken]) < std::stod(local["2"][kFirstToken]));
  CHECK(local["3"][kGpuHits] == "2");  // its facts, encoded for request 1, were resident
  CHECK(local["2"][kMisses] == "2");
  // Each request completes exactly once either way.
  CHECK(local["1"][kFirstToken] == fifo["1"][kFirstToken]);

  // Its parameters bring first come first served back.
  auto no_window = locality_run("window1", ", name: fact_locality, params: {window: 1}");
  CHECK(std::stod(no_window["2"][kFirstToken]) < std::stod(no_window["3"][kFirstToken]));
  auto no_overtakes =
      locality_run("overtakes0", ", name: fact_locality, params: {max_overtakes: 0}");
  CHECK(std::stod(no_overtakes["2"][kFirstToken]) < std::stod(no_overtakes["3"][kFirstToken]));
}
