#pragma once
// @brief The GPU executor for hardware-in-the-loop runs, behind a torch-free header: the
// simulator builds one per replica, replica i on CUDA device i.

#include <cstdint>
#include <memory>
#include <string>

#include "executor/executor.h"
#include "executor/model_config.h"

namespace inferscale {

struct HilExecutorOptions {
  ModelConfig model;
  std::string device = "cuda";        // cuda | cpu (tests)
  int device_index = 0;               // CUDA device of this replica
  std::uint64_t pool_bytes = 0;       // the GPU store's capacity
  std::uint64_t host_bytes = 0;       // the host tier's capacity (page-locked up front)
  std::uint32_t kv_cache_tokens = 0;  // request KV rows
  std::uint32_t max_batch_tokens = 8192;
  std::uint32_t decode_reserve_tokens = 64;
  std::uint32_t warm_rows = 512;        // GpuExecutorOptions::warm_rows (executor.warm_rows)
  double settle_ms = 200;               // GpuExecutorOptions::settle_ms (executor.settle_ms)
  bool copies_beside_pass = true;       // GpuExecutorOptions (executor.copies_beside_pass)
  std::uint32_t copy_inflight_mb = 64;  // GpuExecutorOptions::copy_inflight_mb
  bool rope_delta = false;              // serving.rope: delta
  /// The shared header's tokens when it is prefix-cached (0: not cached): computed before the
  /// run, as a server computes its system prompt at startup, so no measured step pays for it.
  std::uint32_t header_tokens = 0;
  std::uint64_t seed = 0;
};

/// A GpuExecutor bound to its device: every step runs with that device current.
std::unique_ptr<Executor> make_hil_executor(const HilExecutorOptions& options);
/// CUDA devices visible to libtorch (0 without CUDA).
int hil_cuda_devices();

}  // namespace inferscale
