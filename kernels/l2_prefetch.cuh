#pragma once
// @brief A hint to the GPU's L2 cache: bring a range of device memory (a weight matrix the next
// product reads) into L2 ahead of its use, on a side stream while the compute stream runs
// kernels that use little memory bandwidth (attention of a small batch). Changes no memory.

#include <cuda_runtime_api.h>

#include <cstddef>

namespace inferscale {

/// Issues an L2 prefetch of every 128-byte line of [p, p + bytes) on `stream` (device memory).
/// Reference: l2_prefetch_reference (kernels/reference/l2_prefetch.h): no visible effect.
cudaError_t l2_prefetch_launch(const void* p, std::size_t bytes, cudaStream_t stream);

}  // namespace inferscale
