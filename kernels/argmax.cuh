#pragma once
// @brief Greedy sampling on raw pointers: the index of each row's largest value.

#include <cuda_runtime_api.h>

#include "kernels/params.h"

namespace inferscale {

/// Reference: argmax_reference (kernels/reference/argmax.h); the same index bit for bit.
cudaError_t argmax_launch(const ArgmaxParams& p, cudaStream_t stream);

}  // namespace inferscale
