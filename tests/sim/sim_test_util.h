#pragma once
// Helpers for the simulator tests: temp files, small configs, reading results.

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace inferscale::test {

inline std::string source_path(const std::string& rel) {
  return std::string(INFERSCALE_SOURCE_DIR) + "/" + rel;
}

/// An empty folder of this process (ctest runs test cases in parallel processes, and several
/// cases of one file may ask for the same name).
inline std::filesystem::path temp_dir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() /
           ("inferscale_sim_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

inline std::string write_text(const std::filesystem::path& p, const std::string& body) {
  std::ofstream(p) << body;
  return p.string();
}

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

/// Runs the built `inferscale` with `args`, its stdout and stderr to `log`; its exit status.
/// `env`: assignments (`NAME=value ...`) for its environment.
inline int run_cli(const std::string& args, const std::filesystem::path& log,
                   const std::string& env = "") {
  const std::string cmd = env + (env.empty() ? "" : " ") + std::string(INFERSCALE_BINARY_DIR) +
                          "/inferscale " + args + " > " + log.string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// requests.csv as rows of fields (header skipped).
inline std::vector<std::vector<std::string>> read_csv(const std::filesystem::path& p) {
  std::vector<std::vector<std::string>> rows;
  std::ifstream f(p);
  std::string line;
  std::getline(f, line);
  while (std::getline(f, line)) {
    std::vector<std::string> row;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) row.push_back(cell);
    rows.push_back(row);
  }
  return rows;
}

/// Tight KV memory (60 KiB), a small token budget and turn-sized CWE windows: with a small store
/// on top, preemptions, full and entirely pinned stores, chunked prefill, deferred encodes and
/// memory writes all happen. Experiment lines without the store.
inline constexpr const char* kStressBody =
    "gpu: {name: small, memory: 60KiB, bf16_tflops: 1, hbm_gbps: 1, pcie_gbps: 1,"
    " step_overhead_us: 100}\n"
    "scheduler: {max_batch_tokens: 96, max_seqs: 16}\n"
    "serving: {k: 8, header_tokens: 16, footer_tokens: 4, cwe_window: 2, turn_tokens: 10}\n";

/// A config on the tiny model/GPU of tests/sim/data, whose steps cost exactly their overheads.
/// `extra` may set its own `gpu:`.
inline std::string tiny_config(const std::string& trace, const std::string& extra) {
  const bool own_gpu = extra.rfind("gpu:", 0) == 0 || extra.find("\ngpu:") != std::string::npos;
  return "experiment: t\n"
         "trace: " +
         trace +
         "\n"
         "model: " +
         source_path("tests/sim/data/tiny_model.yaml") + "\n" +
         (own_gpu ? "" : "gpu: " + source_path("tests/sim/data/tiny_gpu.yaml") + "\n") +
         "memory: {activation_reserve: 1KiB}\n" + extra;
}

/// Llama-3.1-8B on an H200 serving 200 generated requests of 20 users in kv_inject mode, with a
/// GPU store of 0.2 % (most facts on the host) and asynchronous host loads: one run, `kv`, to which
/// an `executor:` line may be appended.
inline std::string async_loads_experiment() {
  return "experiment: e\nseed: 3\nmodel: llama-3.1-8b\ngpu: h200\n"
         "trace: {generate: {users: 20, requests: 200, k: 20, arrival: poisson, rate: 6}}\n"
         "serving: {k: 20, mode: kv_inject}\n"
         "store: {gpu: {capacity: 0.2%}, host: {capacity: 64GB, async_loads: true}}\n"
         "runs:\n  - name: kv\n";
}

}  // namespace inferscale::test
