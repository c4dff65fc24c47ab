#pragma once
// @brief CPU reference of causal grouped-query attention over KV cache segments
// (kernels/split_kv_attention.cu): the definition, in double, without any splitting.

#include "kernels/params.h"

namespace inferscale {

/// For every segment s, its query i (token cu_q[s] + i) and head h: with g = h / (heads /
/// kv_heads), n the segment's queries and L = k_used[s] - n + i,
///   w_j = exp(scale * q[token, h] . k[k_start[s] + j, g] - max),  j = 0 .. L
///   out[token, h] = sum_j w_j v[k_start[s] + j, g] / sum_j w_j
/// in double, rounded once to the dtype. Index arrays are host pointers; plan and workspace are
/// ignored. Where `weighted_abs` ([tokens, heads, head_dim] fp32, contiguous) is given it
/// receives sum_j w_j |v[.., d]| / sum_j w_j: the scale of the error that rounding the weights
/// to 16 bits can make in out[.., d] (the kernel tests' tolerance).
void split_kv_attention_reference(const SplitKvAttentionParams& p, float* weighted_abs = nullptr);

}  // namespace inferscale
