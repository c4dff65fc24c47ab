// Hardware in the loop on the CPU: `inferscale run` with executor kind `gpu` (device cpu, fp32,
// the tiny model) performs every step the scheduler plans, in text and kv_inject mode, with a
// small GPU store and a host tier so that loads, offloads, encodes and per-request KV all occur.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "executor/gpu/device_ops.h"
#include "tests/catch.h"
#include "tests/sim/sim_test_util.h"

using namespace inferscale::test;

namespace {

namespace fs = std::filesystem;

/// A new folder per process (not fs::remove_all: in a process with PyTorch's CUDA libtorch that
/// may bind to libtorch's own copy, which crashes; see sim/runner.cpp).
fs::path fresh_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("inferscale_hil_" + name + "_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

std::string experiment(const std::string& extra) {
  return "experiment: hil_cpu\n"
         "seed: 3\n"
         "trace: {generate: {users: 8, requests: 40, facts_per_user: 12, k: 6, rate: 200, seed: "
         "2}}\n"
         "model: " +
         std::string(INFERSCALE_SOURCE_DIR) +
         "/tests/sim/data/tiny_model.yaml\n"
         "gpu: {name: small, memory: 8MiB, bf16_tflops: 1, hbm_gbps: 1, pcie_gbps: 1, "
         "step_overhead_us: 100}\n"
         "memory: {activation_reserve: 1KiB}\n"
         "scheduler: {max_batch_tokens: 64, max_seqs: 8}\n"
         "serving: {k: 6, header_tokens: 8, footer_tokens: 4, cwe_window: 2, turn_tokens: 6}\n"
         "store: {gpu: {capacity: 6KiB, eviction: lru}, host: {capacity: 16KiB, eviction: "
         "fifo}}\n" +
         extra;
}

/// `inferscale run` of the experiment on the CPU executor with these runs, into dir/out; its
/// output in dir/log.txt. Returns the exit status.
int run_on_cpu(const fs::path& dir, const std::string& runs) {
  std::ofstream(dir / "exp.yaml") << experiment(
      "executor: {kind: gpu, device: cpu, warm_rows: 4, settle_ms: 1}\nruns:\n" + runs);
  return run_cli(
      "run " + (dir / "exp.yaml").string() + " --no-progress --out " + (dir / "out").string(),
      dir / "log.txt");
}

}  // namespace

TEST_CASE("hardware in the loop on the CPU: text and kv_inject runs complete every request") {
  const fs::path dir = fresh_dir("cpu");
  const int rc = run_on_cpu(
      dir,
      "  - {name: text, serving: {mode: text}}\n"
      "  - {name: kv_inject, serving: {mode: kv_inject}}\n"
      "  - {name: kv_inject_async, serving: {mode: kv_inject}, store: {host: {capacity: 16KiB, "
      "eviction: fifo, async_loads: true}}}\n");
  INFO(read_text(dir / "log.txt"));
  REQUIRE(rc == 0);
  for (const char* run : {"text", "kv_inject", "kv_inject_async"}) {
    INFO(run);
    const auto s = nlohmann::json::parse(read_text(dir / "out" / "hil_cpu" / run / "summary.json"));
    CHECK(s["requests"].get<int>() == 40);
    CHECK(s["config"]["executor"]["warm_rows"].get<int>() == 4);
    CHECK(s["config"]["executor"]["settle_ms"].get<double>() == 1.0);
    if (std::string(run) != "text") {
      // The store is small on purpose: host loads, encodes of misses and GPU hits all happen.
      CHECK(s["work"]["host_loads"].get<int>() > 0);
      CHECK(s["work"]["encodes"].get<int>() > 0);
      CHECK(s["hit_ratio"]["gpu_object"].get<double>() > 0);
    }
  }
}

TEST_CASE("hardware in the loop on the CPU: the host trace times each executor's set-up") {
  const fs::path dir = fresh_dir("trace");
  ::setenv("INFERSCALE_HOST_TRACE", "1", 1);
  const int rc = run_on_cpu(dir,
                            "  - {name: text, serving: {mode: text}}\n"
                            "  - {name: kv_inject, serving: {mode: kv_inject}}\n");
  ::unsetenv("INFERSCALE_HOST_TRACE");
  const std::string log = read_text(dir / "log.txt");
  INFO(log);
  REQUIRE(rc == 0);
  // Per run's executor: its construction by part, its warm-up, the settling passes before the
  // first prefill step, the header, and its teardown; and a line per step.
  std::map<std::string, int> lines;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (line.rfind("host ", 0) == 0 && colon != std::string::npos) ++lines[line.substr(0, colon)];
    if (line.rfind("host setup:", 0) == 0) {
      // Its points in order, each after the one before.
      long last = -1;
      std::size_t at = 0;
      for (const char* point : {"ops=", "weights=", "pool=", "host_tier=", "maps=", "cache="}) {
        at = line.find(point, at);
        REQUIRE(at != std::string::npos);
        const long us = std::stol(line.substr(at + std::strlen(point)));
        CHECK(us >= last);
        last = us;
      }
      CHECK(line.find("host_mb=") != std::string::npos);
    }
  }
  for (const char* kind :
       {"host setup", "host warm-up", "host settle", "host header", "host teardown"}) {
    INFO(kind);
    CHECK(lines[kind] == 2);  // text and kv_inject
  }
  CHECK(lines["host trace"] > 10);
}

TEST_CASE("a gpu run whose host tier cannot be page-locked on this machine is an input error") {
  const fs::path dir = fresh_dir("pinned");
  std::ofstream(dir / "exp.yaml") << experiment(
      "executor: {kind: gpu, device: cuda}\n"
      "runs:\n  - {name: kv_inject, serving: {mode: kv_inject}, store: {host: {capacity: "
      "1000000GB}}}\n");
  const int rc = run_cli("validate " + (dir / "exp.yaml").string(), dir / "log.txt");
  const std::string log = read_text(dir / "log.txt");
  INFO(log);
  CHECK(rc == 2);
  CHECK(log.find("page-locks the host tier") != std::string::npos);
  CHECK(log.find("store.host") != std::string::npos);
}

TEST_CASE("device cuda without a CUDA device: an input error naming --device") {
  if (inferscale::cuda_ops_available()) {
    INFERSCALE_SKIP("this machine runs CUDA: the check is for machines and builds without it");
  }
  const fs::path dir = fresh_dir("no_cuda");
  const std::vector<std::string> cmds = {
      "bench executor --model llama-3.1-8b --device cuda",
      "calibrate --executor gpu --out " + (dir / "p.yaml").string()};
  for (const std::string& cmd : cmds) {
    INFO(cmd);
    const int rc = run_cli(cmd, dir / "log.txt");
    const std::string log = read_text(dir / "log.txt");
    INFO(log);
    CHECK(rc == 2);
    CHECK(log.find("--device") != std::string::npos);
    CHECK(log.find("--device cpu") != std::string::npos);
    CHECK(log.find("internal error") == std::string::npos);
  }
  CHECK_FALSE(fs::exists(dir / "p.yaml"));
}
