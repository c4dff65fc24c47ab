#pragma once
// @brief Fused KV injection: gather fact-pool blocks, rotate K at composed positions, copy V,
// into a request's KV cache, for all layers in one pass.

#include <cuda_runtime_api.h>

#include "kernels/params.h"

namespace inferscale {

/// Reference: kv_inject_reference (kernels/reference/inject.h), bit-exact.
cudaError_t kv_inject_launch(const InjectParams& p, cudaStream_t stream);

}  // namespace inferscale
