// `inferscale calibrate --executor gpu`: the libtorch executor, sized for the grid. Compiled only
// where the GPU executor is built (sim/CMakeLists.txt); registers itself.
#include <cstdio>

#include "cli/calibrate.h"
#include "cli/cuda_check.h"
#include "executor/gpu/gpu_executor.h"
#include "traces/error.h"

namespace inferscale::cli {

namespace {

double gib(std::uint64_t bytes) {
  return double(bytes) / double(1ull << 30);
}

/// Device memory kept beside the weights, fact pool and KV cache for activations, workspaces
/// and CUDA graphs.
constexpr std::uint64_t kWorkspaceBytes = 3ull << 30;

/// The KV cache rows of the grid's executor on the card: the grid's rows and half again for
/// fragmentation, less of that half where the card has less memory free. A grid whose weights,
/// fact pool, workspace and live rows cannot fit is refused before anything is allocated.
std::uint32_t fit_cache_rows(const CalibrationTarget& t, const GpuExecutorOptions& o) {
  const CalibrationNeeds& n = t.needs;
  const std::uint64_t free = t.device == "cuda" ? cuda_free_bytes() : 0;
  if (free == 0) return std::uint32_t(n.cache_rows());
  const std::uint64_t weights = t.model.weight_bytes();
  const std::uint64_t row = t.model.kv_bytes_per_token();
  const std::uint64_t rows =
      n.cache_rows_within(free, weights + o.pool_bytes + kWorkspaceBytes, row);
  if (rows > 0) return std::uint32_t(rows);
  const std::uint64_t need = weights + o.pool_bytes + kWorkspaceBytes + n.min_cache_rows() * row;
  char msg[512];
  std::snprintf(msg, sizeof msg,
                "the grid's executor needs at least %.1f GiB of device memory (weights %.1f, "
                "fact pool %.1f, KV cache %.1f, workspace %.1f) and the device has %.1f GiB "
                "free: choose a smaller grid or a card with more memory",
                gib(need), gib(weights), gib(o.pool_bytes), gib(n.min_cache_rows() * row),
                gib(kWorkspaceBytes), gib(free));
  throw InputError("--grid", msg);
}

ProfiledExecutor make_gpu_executor(const CalibrationTarget& t) {
  if (t.device == "cuda") require_cuda("--device");
  const CalibrationNeeds& n = t.needs;
  GpuExecutorOptions o;
  o.model = t.model;
  o.device = t.device;
  o.dtype = t.device == "cuda" ? DType::kBF16 : DType::kF32;
  o.seed = t.seed;
  o.copies_beside_pass = t.copies_beside_pass;
  const std::uint64_t block = FactPool::block_bytes(t.model, std::uint32_t(dtype_bytes(o.dtype)));
  o.pool_bytes = (n.pool_blocks + 64) * block;
  o.reserved_pool_tokens = 1024;  // the header
  o.decode_reserve_tokens = n.decode_reserve_tokens();
  o.rope_positions = std::int32_t(n.positions());
  o.max_batch_tokens = 16384;
  // The host tier page-locked up front and its copy lanes started, as a run's executor has them
  // (a tier that grows inside a step stalls the device).
  o.host_bytes = (n.host_blocks + 64) * block;
  o.kv_cache_tokens = fit_cache_rows(t, o);
  auto executor = std::make_unique<GpuExecutor>(o);
  ProfiledExecutor p;
  p.machine = executor->ops().device_name();
  p.copy_issue = [e = executor.get()] { return e->copy_issue(); };
  p.executor = std::move(executor);
  return p;
}

[[maybe_unused]] const bool kRegistered = register_calibration_executor("gpu", &make_gpu_executor);

}  // namespace

}  // namespace inferscale::cli
