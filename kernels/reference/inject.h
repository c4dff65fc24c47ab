#pragma once
// @brief CPU reference of the fused KV injection (kernels/inject.cu).

#include "kernels/params.h"

namespace inferscale {

/// For each token t and layer l: cache_k[l][dst[t]] = rope(pool K[src[t]][l], positions[t]);
/// cache_v[l][dst[t]] = pool V[src[t]][l] (bit copy).
void kv_inject_reference(const InjectParams& p);

}  // namespace inferscale
