#pragma once
// @brief CPU reference of the native KV append after the QKV projection (kernels/kv_append.cu).

#include "kernels/params.h"

namespace inferscale {

/// For each token t, with x[t] = round(qkv[t] * s[t]) (s[t] = 1 / rms(norm.x[t]) when norm.x is
/// set; else x[t] = qkv[t]): q_out[t] = rope(q of x[t]); cache_k[slot[t]] = rope(k of x[t]);
/// cache_v[slot[t]] = v of x[t]; and where pool_slots[t] >= 0: pool K = k of x[t] (its rope if
/// pool_rotated), pool V = v of x[t].
void kv_append_reference(const KvAppendParams& p);

}  // namespace inferscale
