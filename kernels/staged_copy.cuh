#pragma once
// @brief Small copies through the multiprocessors instead of a copy engine: between page-locked
// host memory (which a kernel reads and writes directly under unified addressing) and the device.
// The executor uses it for a step's metadata and sampled tokens, so that they never queue on a
// copy engine behind bulk host-tier copies.

#include <cuda_runtime_api.h>

#include <cstddef>

namespace inferscale {

/// Copies `words` 4-byte words from src to dst (each device memory or page-locked host memory,
/// 4-byte aligned) on `stream`. Reference: staged_copy_reference (kernels/reference/staged_copy.h).
cudaError_t staged_copy_launch(void* dst, const void* src, std::size_t words, cudaStream_t stream);

}  // namespace inferscale
