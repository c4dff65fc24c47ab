// Built where this libtorch has no CUDA or the kernels are not built: the CUDA ops are absent.
#include <stdexcept>

#include "executor/gpu/device_ops.h"

namespace inferscale {

std::unique_ptr<DeviceOps> make_cuda_ops() {
  throw std::runtime_error("this build has no CUDA executor (libtorch without CUDA or no nvcc)");
}

bool cuda_ops_available() {
  return false;
}

std::uint64_t cuda_free_bytes() {
  return 0;
}

void release_cached_cuda_memory() {}

void use_programmatic_launch(bool on) {
  (void)on;
}

}  // namespace inferscale
