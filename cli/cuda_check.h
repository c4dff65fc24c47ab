#pragma once
// @brief The check of `--device cuda` shared by the commands that run the libtorch executor.

#include "executor/gpu/device_ops.h"
#include "traces/error.h"

namespace inferscale::cli {

/// `--device cuda` on a machine without a CUDA device, or a build without the CUDA kernels: an
/// input error on `flag` (status 2) that names the CPU alternative.
inline void require_cuda(const char* flag) {
  if (!cuda_ops_available()) {
    throw InputError(flag,
                     "no CUDA device here (or this build has no CUDA kernels); "
                     "--device cpu runs the same steps on the CPU");
  }
}

}  // namespace inferscale::cli
