#pragma once
// @brief Native KV append after a layer's fused QKV projection: rotate q and k at the tokens'
// positions, write k and v into the KV cache, and store fact KV into the pool; optionally first
// scale each token's q, k and v by its 1 / rms (the attention RMSNorm folded into the weights).

#include <cuda_runtime_api.h>

#include "kernels/params.h"

namespace inferscale {

/// Reference: kv_append_reference (kernels/reference/kv_append.h), bit-exact without `norm`.
/// With it, the device's fp32 sum of squares differs from the reference's (double) by a few fp32
/// ulps of 1 / rms, so a scaled element may round one step apart before RoPE.
cudaError_t kv_append_launch(const KvAppendParams& p, cudaStream_t stream);

}  // namespace inferscale
