#pragma once
// @brief Split-KV (flash-decoding style) causal GQA attention for short query segments over long
// contexts: prefill chunks of a few dozen tokens after injected facts, and decode steps.

#include <cuda_runtime_api.h>

#include "kernels/params.h"

namespace inferscale {

/// Runs the attention of `p` by its plan (p.plan, from split_kv_plan()), then, unless the plan
/// is direct, the kernel that combines the partial results into p.out. Parameters that
/// split_kv_attention_check() rejects return cudaErrorInvalidValue without a launch; a build
/// whose device code for the kernel predates sm_80 returns cudaErrorNotSupported.
/// Reference: split_kv_attention_reference (kernels/reference/split_kv_attention.h), within
/// rounding of the 16-bit softmax weights that the matrix products take.
cudaError_t split_kv_attention_launch(const SplitKvAttentionParams& p, cudaStream_t stream);

}  // namespace inferscale
