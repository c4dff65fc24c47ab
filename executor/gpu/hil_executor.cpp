#include "executor/gpu/hil_executor.h"

#include <ATen/Context.h>
#include <c10/core/DeviceGuard.h>

#include "executor/gpu/device_ops.h"
#include "executor/gpu/gpu_executor.h"
#include "executor/gpu/host_trace.h"

namespace inferscale {

namespace {

class DeviceBoundExecutor final : public Executor {
 public:
  DeviceBoundExecutor(const HilExecutorOptions& o, at::Device device) : device_(device) {
    c10::DeviceGuard guard(device_);
    GpuExecutorOptions g;
    g.model = o.model;
    g.device = o.device;
    g.dtype = o.device == "cuda" ? DType::kBF16 : DType::kF32;
    g.pool_bytes = o.pool_bytes;
    g.host_bytes = o.host_bytes;
    g.kv_cache_tokens = o.kv_cache_tokens;
    g.max_batch_tokens = o.max_batch_tokens;
    g.decode_reserve_tokens = o.decode_reserve_tokens;
    g.warm_rows = o.warm_rows;
    g.settle_ms = o.settle_ms;
    g.copies_beside_pass = o.copies_beside_pass;
    g.copy_inflight_mb = o.copy_inflight_mb;
    g.rope = o.rope_delta ? RopeMode::kDelta : RopeMode::kPreRope;
    g.seed = o.seed;
    inner_ = std::make_unique<GpuExecutor>(std::move(g));
    inner_->warm_up();
    HostTrace trace("host header:");
    if (o.header_tokens > 0) inner_->prepare_header(o.header_tokens);
    trace.at("prepared");
  }
  ~DeviceBoundExecutor() override {
    c10::DeviceGuard guard(device_);
    HostTrace trace("host teardown:");
    inner_.reset();
    trace.at("executor");
    // The next run's executor allocates its pool and cache whole: give this one's back.
    release_cached_cuda_memory();
    trace.at("cached");
  }
  BatchResult execute(const BatchPlan& plan) override {
    c10::DeviceGuard guard(device_);
    return inner_->execute(plan);
  }
  std::string name() const override { return inner_->name(); }

 private:
  at::Device device_;
  std::unique_ptr<GpuExecutor> inner_;
};

}  // namespace

int hil_cuda_devices() {
  return at::hasCUDA() ? static_cast<int>(at::getNumGPUs()) : 0;
}

std::unique_ptr<Executor> make_hil_executor(const HilExecutorOptions& options) {
  const at::Device device =
      options.device == "cuda"
          ? at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(options.device_index))
          : at::Device(at::kCPU);
  return std::make_unique<DeviceBoundExecutor>(options, device);
}

}  // namespace inferscale
