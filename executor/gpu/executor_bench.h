#pragma once
// @brief `inferscale bench executor`: TTFT, TPOT and throughput of text vs kv_inject on the real
// executor, over batch sizes and k, with the injection kernel's bandwidth and the text prefill's
// arithmetic rate.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "executor/gpu/gpu_executor.h"

namespace inferscale {

struct ExecutorBenchOptions {
  ModelConfig model;
  std::string device = "cuda";
  DType dtype = DType::kBF16;
  std::uint32_t header = 64, fact = 24, query = 24, footer = 8, output = 50;
  std::vector<std::uint32_t> batches = {1, 16, 64};
  std::vector<std::uint32_t> ks = {0, 10, 25, 50};
  std::vector<std::string> modes = {"text", "kv_inject"};
  RopeMode rope = RopeMode::kPreRope;
  std::uint32_t reps = 3, warmup = 2;  // two: a recurring shape's graph is captured in the second
  std::uint64_t seed = 0;
  SplitKvPolicy split_kv;  // the executor's attention choice (A/B: split_kv.enabled)
  /// CUDA graphs for the recurring step shapes: on in the bench (off in the executor).
  CudaGraphPolicy cuda_graphs{.enabled = true};
  BlasPolicy blas;                  // the products' BLAS library (the executor's default)
  bool programmatic_launch = true;  // GpuExecutorOptions::programmatic_launch
  std::string command;              // echoed into the results
};

/// Runs every (mode, batch, k) and returns the results document: settings, and one row per
/// (mode, batch, k) with mode, batch, k, ttft_ms, tpot_ms, tokens_per_s, plus tflops (text) or
/// inject_tbps (kv_inject), and which attention the TTFT step and the decode steps ran
/// (split_kv, flash, math or mixed). `log` receives progress lines. Every setting that changes
/// the measurement comes from `options` (the command's flags) and is recorded in the results'
/// settings.
nlohmann::json run_executor_bench(const ExecutorBenchOptions& options,
                                  const std::function<void(const std::string&)>& log);

/// The rows as an aligned text table.
std::string executor_bench_table(const nlohmann::json& results);

}  // namespace inferscale
