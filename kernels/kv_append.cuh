#pragma once
// @brief Native KV append after a layer's fused QKV projection: rotate q and k at the tokens'
// positions, write k and v into the KV cache, and store fact KV into the pool.

#include <cuda_runtime_api.h>

#include "kernels/params.h"

namespace inferscale {

/// Reference: kv_append_reference (kernels/reference/kv_append.h), bit-exact.
cudaError_t kv_append_launch(const KvAppendParams& p, cudaStream_t stream);

}  // namespace inferscale
