#pragma once
// @brief Programmatic dependent launch (PDL, sm_90 and later) for the kernels of a layer that
// follow one another (kv_append, split-KV attention and its combine, silu_mul, inject): such a
// kernel may be launched while the one before it in the stream is still running, so that its
// blocks are resident and waiting when that one finishes, rather than launched after it.
//
// A kernel launched by launch_kernel() must call wait_for_prior_grids() before it reads anything
// that earlier work in the stream writes, and may call allow_dependent_grids() to let the next
// PDL kernel launch before it finishes. Without the launch attribute (programmatic launch off,
// or a GPU before sm_90) both are no-ops, so results are the same either way. The switch is
// process-wide (kernels/launch.h).

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "kernels/launch.h"

namespace inferscale {

namespace device {

/// Waits until every grid this one depends on has finished and its writes are visible.
__device__ __forceinline__ void wait_for_prior_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

/// Lets the next programmatically launched grid start launching its blocks (once every block of
/// this grid has called it or exited); it still waits for this grid in wait_for_prior_grids().
__device__ __forceinline__ void allow_dependent_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

/// kernel<<<grid, block, smem, stream>>>(args...), with programmatic stream serialization
/// allowed when programmatic_launch() is on. Returns the launch's error.
template <typename... Params, typename... Args>
cudaError_t launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem,
                          cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attr;
  config.numAttrs = programmatic_launch() ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

}  // namespace device
}  // namespace inferscale
