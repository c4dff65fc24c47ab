// executor kind `gpu`: hardware-in-the-loop. Every step the scheduler plans runs on the real GPU
// executor (replica i on CUDA device i) and the virtual clock advances by its measured time.
// Linked into the programs only in builds with the libtorch executor (see cli/CMakeLists.txt).
#include <unistd.h>

#include <string>

#include <c10/util/Exception.h>

#include "executor/gpu/hil_executor.h"
#include "sim/executor_factory.h"
#include "traces/error.h"

namespace inferscale {

namespace {

HilExecutorOptions hil_options(const RunConfig& run, int replica) {
  HilExecutorOptions o;
  o.model = run.model;
  o.device = run.executor.device;
  o.device_index = replica;
  // The store's bytes are the model's dtype; the CPU executor keeps fp32 KV, so its pool holds
  // the same facts in proportionally more bytes.
  const std::uint64_t store =
      run.serving.mode == ServingMode::kKvInject ? run.store.gpu.capacity_bytes : 0;
  o.pool_bytes = o.device == "cuda" ? store : store / run.model.dtype_bytes * 4;
  const bool host = run.serving.mode == ServingMode::kKvInject && run.store.host.enabled;
  o.host_bytes = host ? run.store.host.capacity_bytes : 0;
  // As many request-KV rows as the simulator's memory model has tokens of request KV.
  const std::uint64_t sim_tokens =
      run.request_kv_bytes() / run.model.kv_bytes_per_token() / kBlockTokens * kBlockTokens;
  o.kv_cache_tokens = static_cast<std::uint32_t>(std::min<std::uint64_t>(sim_tokens, 0x7fffffffu));
  o.max_batch_tokens = run.scheduler.max_batch_tokens;
  o.rope_delta = run.serving.rope == RopeMode::kDelta;
  o.seed = run.seed;
  o.header_tokens = run.serving.header_cache ? run.serving.header_tokens : 0;
  o.warm_rows = run.executor.warm_rows;
  o.settle_ms = run.executor.settle_ms;
  o.copies_beside_pass = run.executor.copies_beside_pass;
  o.copy_inflight_mb = run.executor.copy_inflight_mb;
  return o;
}

void check_gpu(const RunConfig& run) {
  if (run.executor.device != "cuda") return;
  // Each replica page-locks its host tier up front: it must fit this machine's memory.
  if (run.serving.mode == ServingMode::kKvInject && run.store.host.enabled) {
    const double ram = double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGE_SIZE));
    const double pinned = double(run.store.host.capacity_bytes) * double(run.replicas);
    if (ram > 0 && pinned > 0.8 * ram) {
      throw InputError(
          run.store.host.where,
          "executor kind 'gpu' page-locks the host tier up front: " + std::to_string(run.replicas) +
              " x " + std::to_string(run.store.host.capacity_bytes / 1000000000) +
              " GB is more than 80 % of this machine's " +
              std::to_string(std::uint64_t(ram / 1e9)) + " GB of memory");
    }
  }
  const int gpus = hil_cuda_devices();
  if (gpus < static_cast<int>(run.replicas)) {
    throw InputError(run.executor.where,
                     "executor kind 'gpu' runs one replica per GPU: " +
                         std::to_string(run.replicas) + " replicas, " + std::to_string(gpus) +
                         " CUDA device(s) here (use executor.device: cpu for a CPU run)");
  }
}

const bool kRegistered = register_executor_kind(
    "gpu",
    [](const RunConfig& run, int replica) {
      try {
        return make_hil_executor(hil_options(run, replica));
      } catch (const c10::OutOfMemoryError&) {
        // The config sizes the fact pool and the KV cache for its GPU preset's memory.
        throw InputError(run.executor.where,
                         "the GPU ran out of memory while the executor was set up: the run is "
                         "sized for 'gpu: " +
                             run.gpu.name + "' (" + std::to_string(run.gpu.memory_bytes >> 30) +
                             " GiB); on a GPU with less memory name its preset, or lower "
                             "store.gpu.capacity or memory.gpu_utilization");
      }
    },
    check_gpu);

}  // namespace

}  // namespace inferscale
