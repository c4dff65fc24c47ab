// Experiments through `executor: {kind: remote}`: byte-identical to the in-process cost model;
// a server that stops, hangs, is unreachable or is killed fails the run with one clear message,
// no hang, and keeps the requests completed so far in <run>.partial/; a served calibrated model
// with its copy order set on the command line.
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <future>
#include <nlohmann/json.hpp>

#include "tests/catch.h"
#include "tests/executor/remote_test_util.h"

using namespace inferscale;
using namespace inferscale::test;
namespace fs = std::filesystem;

namespace {

/// Counts the steps a server performs (over all its sessions) and holds step `hold_at` until
/// released, so a test can act while a run is known to be in the middle.
struct StepGate {
  std::mutex mu;
  std::condition_variable cv;
  std::uint64_t steps = 0, hold_at = 0;
  bool held = false, released = false;

  /// False only if the step is never reached (a minute is a hang guard).
  bool wait_held() {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::minutes(1), [this] { return held; });
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu);
    released = true;
    cv.notify_all();
  }
};

class GatedExecutor final : public Executor {
 public:
  GatedExecutor(std::unique_ptr<Executor> inner, std::shared_ptr<StepGate> gate)
      : inner_(std::move(inner)), gate_(std::move(gate)) {}
  BatchResult execute(const BatchPlan& plan) override {
    BatchResult r = inner_->execute(plan);
    std::unique_lock<std::mutex> lock(gate_->mu);
    if (++gate_->steps == gate_->hold_at) {
      gate_->held = true;
      gate_->cv.notify_all();
      gate_->cv.wait(lock, [this] { return gate_->released; });
    }
    return r;
  }
  std::string name() const override { return "gated " + inner_->name(); }

 private:
  std::unique_ptr<Executor> inner_;
  std::shared_ptr<StepGate> gate_;
};

remote::SessionExecutorFactory gated(const RunConfig& run, std::shared_ptr<StepGate> gate) {
  auto inner = cost_model_factory(run);
  return [inner, gate] { return std::make_unique<GatedExecutor>(inner(), gate); };
}

std::string remote_executor(const std::vector<std::string>& endpoints,
                            const std::string& extra = "") {
  std::string list;
  for (const auto& e : endpoints) list += (list.empty() ? "" : ", ") + e;
  return "executor: {kind: remote, endpoints: [" + list + "]" + extra + "}\n";
}

/// Runs `yaml` and returns the message of the ExecutorFailure it ends with ("" if none). No
/// assertions inside: it also runs on a thread of its own.
std::string failed_run(const fs::path& dir, const std::string& yaml) {
  try {
    run_yaml(dir, yaml, "remote");
  } catch (const ExecutorFailure& e) {
    return e.what();
  }
  return "";
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

/// `inferscale serve-executor --listen 127.0.0.1:0 ARGS` in a process of its own: its pid, the
/// endpoint it listens on, and its log (stderr, read from `log`); killed when this goes.
struct CliServer {
  explicit CliServer(const std::string& args) {
    const std::string bin = std::string(INFERSCALE_BINARY_DIR) + "/inferscale";
    // The server's pid, and its log on the same pipe, the two in either order.
    log = popen(("sh -c '" + bin + " serve-executor --listen 127.0.0.1:0 " + args +
                 " 2>&1 & echo pid $!; wait'")
                    .c_str(),
                "r");
    if (log == nullptr) return;
    char line[1024];
    while ((pid == 0 || endpoint.empty()) && std::fgets(line, sizeof(line), log) != nullptr) {
      const std::string l = line;
      if (starts_with(l, "pid ")) pid = static_cast<pid_t>(std::atol(line + 4));
      const auto at = l.find("listening on 127.0.0.1:");
      if (at != std::string::npos) {
        const auto begin = at + std::strlen("listening on ");
        endpoint = l.substr(begin, l.find(' ', begin) - begin);
      }
    }
  }
  ~CliServer() {  // never leave the server behind, whatever failed
    if (pid > 1) ::kill(pid, SIGKILL);
    if (log != nullptr) pclose(log);
  }
  FILE* log = nullptr;
  pid_t pid = 0;
  std::string endpoint;
};

}  // namespace

TEST_CASE("runs through remote servers give byte-identical requests.csv to the in-process model") {
  const auto dir = temp_dir("remote_identical");
  const auto trace = remote_trace(dir, 600);
  const std::string runs = "runs:\n  - name: inject\n  - name: text\n    serving: {mode: text}\n";
  const std::string base = tiny_config(trace, kRemoteStress);
  const auto local = run_yaml(dir, base + runs, "local");

  // Two servers for the kv_inject run's two replicas, a third (no pool) for the text run.
  const auto exp = load_yaml(dir, base + runs);
  const RunConfig &inject = exp.runs.at(0), &text = exp.runs.at(1);
  TestServer a(executor_identity(inject), cost_model_factory(inject));
  TestServer b(executor_identity(inject), cost_model_factory(inject));
  TestServer c(executor_identity(text), cost_model_factory(text));
  const auto remote =
      run_yaml(dir,
               base + remote_executor({a.endpoint(), b.endpoint()}) +
                   "runs:\n  - name: inject\n  - name: text\n    serving: {mode: text}\n    " +
                   remote_executor({c.endpoint()}),
               "remote");
  REQUIRE(remote.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    INFO(local[i].config.name);
    const std::string want = read_text(fs::path(local[i].dir) / "requests.csv");
    CHECK(read_text(fs::path(remote[i].dir) / "requests.csv") == want);
    CHECK(std::count(want.begin(), want.end(), '\n') == 601);
    CHECK(remote[i].summary.steps == local[i].summary.steps);
    CHECK(remote[i].summary.busy_fraction == local[i].summary.busy_fraction);
  }
  CHECK(local[0].summary.loads > 0);  // the plans carried loads, offloads and encodes
  CHECK(local[0].summary.encodes > 0);
  // Replica i went to endpoints[i % 2]: one session on each kv_inject server.
  CHECK(a.log->wait_for("client disconnected"));
  CHECK(b.log->wait_for("client disconnected"));
  CHECK(c.log->wait_for("client disconnected", 2));
  CHECK(a.log->count("handshake ok") == 1);
  CHECK(b.log->count("handshake ok") == 1);
  CHECK(c.log->count("handshake ok") == 2);
  const auto summary = nlohmann::json::parse(read_text(fs::path(remote[0].dir) / "summary.json"));
  CHECK(summary["config"]["executor"]["kind"] == "remote");
  CHECK(summary["config"]["executor"]["endpoints"].size() == 2);
  CHECK_FALSE(summary.contains("status"));
}

TEST_CASE("a server stopped mid-run fails the run and keeps the completed requests") {
  const auto dir = temp_dir("remote_stopped");
  const auto trace = remote_trace(dir, 600);
  const std::string base = tiny_config(trace, kRemoteStress);
  const auto local = run_yaml(dir, base + "runs:\n  - name: r\n", "local");
  const std::string full = read_text(fs::path(local.at(0).dir) / "requests.csv");

  const RunConfig run = load_yaml(dir, base + "runs:\n  - name: r\n").runs.at(0);
  auto gate = std::make_shared<StepGate>();
  gate->hold_at = 400;
  TestServer s(executor_identity(run), gated(run, gate));
  const std::string yaml = base + remote_executor({s.endpoint()}) + "runs:\n  - name: r\n";
  auto pending = std::async(std::launch::async, [&] { return failed_run(dir, yaml); });
  REQUIRE(gate->wait_held());  // step 400 is running on the server
  s.server->stop();            // from this thread: listener and sessions close
  gate->release();             // the step returns; its session ends without replying
  const std::string message = pending.get();

  INFO(message);
  CHECK(starts_with(message, "run t/r failed: " + s.endpoint() + ": "));
  CHECK(message.find("(server stopped or crashed?)") != std::string::npos);
  const fs::path results = dir / "remote" / "t";
  CHECK_FALSE(fs::exists(results / "r"));
  for (const auto& e : fs::directory_iterator(results)) {
    CHECK(e.path().filename().string().rfind("r.tmp", 0) != 0);  // no temporary folder left
  }
  REQUIRE(fs::exists(results / "r.partial" / "requests.csv"));
  const std::string partial = read_text(results / "r.partial" / "requests.csv");
  const auto rows = read_csv(results / "r.partial" / "requests.csv");
  CHECK(message.find(std::to_string(rows.size()) + " completed requests kept in " +
                     (results / "r.partial").string() + "/") != std::string::npos);
  CHECK(rows.size() > 0);
  CHECK(rows.size() < 600);
  CHECK(starts_with(full, partial));  // exactly the requests the full run completed first
  const auto summary = nlohmann::json::parse(read_text(results / "r.partial" / "summary.json"));
  CHECK(summary["status"] == "failed");
  CHECK(message.find(summary["error"].get<std::string>()) != std::string::npos);
  CHECK(summary["requests"] == rows.size());
  CHECK(s.log->wait_for("closed: the server is stopping"));

  // A later successful attempt of the same run removes the stale partial results.
  TestServer again(executor_identity(run), cost_model_factory(run));
  run_yaml(dir, base + remote_executor({again.endpoint()}) + "runs:\n  - name: r\n", "remote");
  CHECK(read_text(results / "r" / "requests.csv") == full);
  CHECK_FALSE(fs::exists(results / "r.partial"));
}

TEST_CASE("a server that stops answering fails the run after executor.timeout_s") {
  const auto dir = temp_dir("remote_hung");
  const auto trace = remote_trace(dir, 300);
  const std::string base = tiny_config(trace, kRemoteStress);
  const RunConfig run = load_yaml(dir, base + "runs:\n  - name: r\n").runs.at(0);
  auto gate = std::make_shared<StepGate>();
  gate->hold_at = 50;
  TestServer s(executor_identity(run), gated(run, gate));
  const std::string message = failed_run(
      dir, base + remote_executor({s.endpoint()}, ", timeout_s: 2") + "runs:\n  - name: r\n");
  gate->release();  // let the held step finish so the server can shut down
  INFO(message);
  CHECK(starts_with(message, "run t/r failed: " + s.endpoint() +
                                 ": no answer within 2 s (executor.timeout_s) while waiting "
                                 "for a step's result"));
  CHECK(fs::exists(dir / "remote" / "t" / "r.partial" / "summary.json"));
}

TEST_CASE("an unreachable server fails the run before it starts, keeping nothing") {
  const auto dir = temp_dir("remote_unreachable");
  const auto trace = remote_trace(dir, 50);
  const std::string base = tiny_config(trace, kRemoteStress);
  const RunConfig run = load_yaml(dir, base + "runs:\n  - name: r\n").runs.at(0);
  std::string endpoint;
  {
    TestServer s(executor_identity(run), cost_model_factory(run));
    endpoint = s.endpoint();
  }
  const std::string message =
      failed_run(dir, base + remote_executor({endpoint}) + "runs:\n  - name: r\n");
  CHECK(starts_with(message, "run t/r failed: " + endpoint + ": cannot connect: "));
  CHECK(message.find("(nothing ran)") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "remote" / "t" / "r"));
  CHECK_FALSE(fs::exists(dir / "remote" / "t" / "r.partial"));
  std::error_code ec_ignored;
  for (const auto& e : fs::directory_iterator(dir / "remote" / "t", ec_ignored)) {
    CHECK(e.path().filename().string().rfind("r.tmp", 0) != 0);  // no temporary folder left
  }
}

TEST_CASE("remote executor config errors are positioned input errors") {
  const auto dir = temp_dir("remote_config");
  const auto trace = remote_trace(dir, 10);
  const std::string base = tiny_config(trace, "");
  try {
    load_yaml(dir, base + "executor: {kind: remote, endpoints: [127.0.0.1:7070, nowhere]}\n");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("exp.yaml:") != std::string::npos);
    CHECK(std::string(e.what()).find("executor.endpoints: 'nowhere' is not HOST:PORT") !=
          std::string::npos);
  }
  CHECK_THROWS_AS(load_yaml(dir, base + "executor: {kind: remote}\n"), InputError);
  CHECK_THROWS_AS(load_yaml(dir, base + "executor: {kind: remote, endpoints: [a:1], "
                                        "timeout_s: 0}\n"),
                  InputError);
}

TEST_CASE("CLI: killing the serve-executor process mid-run exits 1 with one line, keeps .partial") {
  const auto dir = temp_dir("remote_cli");
  const auto trace = remote_trace(dir, 4000);
  const std::string gpu =
      write_text(dir / "small.yaml",
                 "name: small\nmemory: 60KiB\nbf16_tflops: 1\nhbm_gbps: 1\npcie_gbps: 1\n"
                 "step_overhead_us: 100\n");
  const std::string model = source_path("tests/sim/data/tiny_model.yaml");
  const std::string bin = std::string(INFERSCALE_BINARY_DIR) + "/inferscale";

  CliServer cli("--model " + model + " --gpu " + gpu + " --pool-capacity 24KiB");
  REQUIRE(cli.pid > 1);
  REQUIRE(!cli.endpoint.empty());
  FILE* server = cli.log;
  const std::string& endpoint = cli.endpoint;
  char line[1024];

  const std::string yaml =
      write_text(dir / "exp.yaml",
                 tiny_config(trace, "gpu: " + gpu +
                                        "\nscheduler: {max_batch_tokens: 96, max_seqs: 16}\n"
                                        "serving: {k: 8, header_tokens: 16, footer_tokens: 4}\n"
                                        "store: {gpu: {capacity: 24KiB}}\nreplicas: 2\n" +
                                        remote_executor({endpoint}) + "runs:\n  - name: r\n"));
  FILE* run = popen((bin + " run " + yaml + " --out " + (dir / "out").string() +
                     " --no-progress 2>&1; echo status $?")
                        .c_str(),
                    "r");
  REQUIRE(run != nullptr);
  int handshakes = 0;
  while (handshakes < 2 && std::fgets(line, sizeof(line), server) != nullptr) {
    if (std::string(line).find("handshake ok") != std::string::npos) ++handshakes;
  }
  REQUIRE(handshakes == 2);
  ::kill(cli.pid, SIGKILL);  // both replicas are connected and stepping
  cli.pid = 0;               // gone: nothing left for the destructor to kill

  std::vector<std::string> output;
  while (std::fgets(line, sizeof(line), run) != nullptr) output.emplace_back(line);
  pclose(run);
  REQUIRE(output.size() == 2);
  INFO(output[0]);
  CHECK(output[1] == "status 1\n");
  CHECK(starts_with(output[0], "error: run t/r failed: " + endpoint + ": "));
  CHECK(output[0].find("completed requests kept in") != std::string::npos);
  const auto summary =
      nlohmann::json::parse(read_text(dir / "out" / "t" / "r.partial" / "summary.json"));
  CHECK(summary["status"] == "failed");
  CHECK_FALSE(fs::exists(dir / "out" / "t" / "r"));
}

TEST_CASE("CLI: serve-executor --copies-first serves the calibrated model pricing copies first") {
  // With a slow host (0.5 ms per copy) the order matters: the served run is byte-identical to
  // the in-process one with executor.copies_beside_pass false, and differs from the default.
  const auto dir = temp_dir("remote_copies_first");
  std::string profile = read_text(source_path("configs/profiles/h200-llama-3.1-8b.yaml"));
  const auto at = profile.find("  issue_ns: ");
  REQUIRE(at != std::string::npos);
  profile.replace(at, profile.find('\n', at) - at, "  issue_ns: 500000");
  const std::string slow = write_text(dir / "slow.yaml", profile);
  const std::string base = async_loads_experiment();
  auto calibrated = [&](const std::string& beside) {
    return "executor: {kind: calibrated, profile: " + slow + ", copies_beside_pass: " + beside +
           "}\n";
  };
  const auto first = run_yaml(dir, base + calibrated("false"), "first").at(0);
  const auto beside = run_yaml(dir, base + calibrated("true"), "beside").at(0);
  CliServer cli("--executor calibrated --profile " + slow + " --pool-capacity 0.2% --copies-first");
  REQUIRE(cli.pid > 1);
  REQUIRE(!cli.endpoint.empty());
  const auto served = run_yaml(dir, base + remote_executor({cli.endpoint}), "served").at(0);
  const std::string want = read_text(fs::path(first.dir) / "requests.csv");
  CHECK(read_text(fs::path(served.dir) / "requests.csv") == want);
  CHECK(read_text(fs::path(beside.dir) / "requests.csv") != want);
}
