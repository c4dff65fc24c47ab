#pragma once
// @brief CPU reference of the native KV append after the QKV projection (kernels/kv_append.cu).

#include "kernels/params.h"

namespace inferscale {

/// For each token t: q_out[t] = rope(q[t]); cache_k[slot[t]] = rope(k[t]); cache_v[slot[t]] = v[t];
/// and where pool_slots[t] >= 0: pool K = k[t] (rope(k[t]) if pool_rotated), pool V = v[t].
void kv_append_reference(const KvAppendParams& p);

}  // namespace inferscale
