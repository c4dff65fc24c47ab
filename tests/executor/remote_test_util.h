#pragma once
// Helpers for the remote executor tests: an in-process server on an ephemeral loopback port,
// its log, small experiments and plans.

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "executor/cost_model/cost_model.h"
#include "executor/remote/server.h"
#include "sim/config/experiment.h"
#include "cli/executor_kinds.h"
#include "sim/executor_factory.h"
#include "sim/runner.h"
#include "tests/sim/sim_test_util.h"
#include "traces/synthetic.h"
#include "traces/writer.h"

namespace inferscale::test {

/// A server's log lines, kept for assertions; wait_for() blocks until a line contains a text.
class LogLines {
 public:
  void add(const std::string& line) {
    std::lock_guard<std::mutex> lock(mu_);
    lines_.push_back(line);
    cv_.notify_all();
  }
  /// Blocks until `count` lines contain `text` (the server logs each session's end once the
  /// session is over, so this waits on an event). False only if that never happens (a minute
  /// is a hang guard, not a timing expectation).
  bool wait_for(const std::string& text, std::size_t count = 1) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::minutes(1), [&] { return count_locked(text) >= count; });
  }
  std::size_t count(const std::string& text) {
    std::lock_guard<std::mutex> lock(mu_);
    return count_locked(text);
  }
  std::string all() {
    std::lock_guard<std::mutex> lock(mu_);
    std::string s;
    for (const auto& l : lines_) s += l + "\n";
    return s;
  }

 private:
  std::size_t count_locked(const std::string& text) const {
    std::size_t n = 0;
    for (const auto& l : lines_) n += l.find(text) != std::string::npos ? 1 : 0;
    return n;
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> lines_;
};

/// A server on 127.0.0.1 (port 0: the system picks one), serving on a thread of its own.
struct TestServer {
  std::shared_ptr<LogLines> log = std::make_shared<LogLines>();
  std::unique_ptr<remote::ExecutorServer> server;

  TestServer(const remote::ExecutorIdentity& identity, remote::SessionExecutorFactory make,
             remote::ServerOptions options = {}) {
    options.host = "127.0.0.1";
    options.port = 0;
    auto sink = log;
    options.log = [sink](const std::string& line) { sink->add(line); };
    server = std::make_unique<remote::ExecutorServer>(options, identity, std::move(make));
    server->start();
  }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(server->port()); }
};

/// Tight memory, a small store, a host tier and a small token budget: every kind of plan entry
/// (encodes, loads, offloads, evictions, host evictions, chunked prefills, preemptions) occurs.
inline const char* kRemoteStress =
    "gpu: {name: small, memory: 60KiB, bf16_tflops: 1, hbm_gbps: 1, pcie_gbps: 1,"
    " step_overhead_us: 100}\n"
    "scheduler: {max_batch_tokens: 96, max_seqs: 16}\n"
    "serving: {k: 8, header_tokens: 16, footer_tokens: 4, cwe_window: 2, turn_tokens: 10}\n"
    "store: {gpu: {capacity: 24KiB, eviction: lru}, host: {capacity: 32KiB, eviction: fifo}}\n"
    "replicas: 2\nrouter: least_loaded\n";

/// A synthetic trace with memory writes during the run.
inline std::string remote_trace(const std::filesystem::path& dir, std::uint32_t requests) {
  SyntheticOptions o;
  o.users = 30;
  o.requests = requests;
  o.facts_per_user = 12;
  o.facts_per_user_spread = 4;
  o.sessions_min = 3;
  o.sessions_max = 6;
  o.live_sessions = 2;
  o.k = 8;
  o.arrival.rate_per_s = 4000;
  o.seed = 11;
  const auto path = (dir / "trace.jsonl").string();
  TraceWriter w(path);
  generate_synthetic(o, w);
  w.close();
  return path;
}

inline ExperimentConfig load_yaml(const std::filesystem::path& dir, const std::string& yaml) {
  return load_experiment(write_text(dir / "exp.yaml", yaml), {});
}

inline std::vector<RunOutcome> run_yaml(const std::filesystem::path& dir, const std::string& yaml,
                                        const std::string& out = "results") {
  RunnerOptions opts;
  opts.out_dir = (dir / out).string();
  opts.progress = false;
  return run_experiment(load_yaml(dir, yaml), opts);
}

/// The in-process cost model of a run (what a server for it hosts).
inline remote::SessionExecutorFactory cost_model_factory(const RunConfig& run) {
  return [run] {
    return std::make_unique<CostModelExecutor>(CostModel(run.model, CostRates::from_gpu(run.gpu)));
  };
}

/// A plan with a little of everything, consistent enough for the cost model.
inline BatchPlan sample_plan(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto small = [&rng](std::uint32_t hi) { return static_cast<std::uint32_t>(rng() % hi); };
  BatchPlan p;
  p.replica = 1;
  p.now = 123456789;
  p.encodes.push_back(FactEncode{7, 3, 20 + small(10), small(50), true});
  p.loads.push_back(FactLoad{8, 16, 16 * 64, kNoRequest, 0});
  p.offloads.push_back(FactLoad{9, 12, 12 * 64, kNoRequest, 0});
  p.evictions = {9};
  for (std::uint32_t i = 0; i < 4; ++i) {
    p.prompt_facts.push_back(PromptFact{100 + i, 10 + small(10), 16 + 20 * i, i != 2, false});
  }
  PrefillItem q;
  q.request = 42;
  q.user = 3;
  q.header_tokens = 16;
  q.footer_tokens = 4;
  q.query_tokens = 12;
  q.facts_begin = 0;
  q.facts_end = 4;
  q.prompt_tokens = 120;
  q.computed_total = 30;
  q.computed_now = 30;
  q.present_tokens = 90;
  q.first_chunk = q.last_chunk = true;
  p.prefills.push_back(q);
  p.decodes.push_back(DecodeItem{41, 200 + small(100)});
  p.released = {40};
  return p;
}

}  // namespace inferscale::test
