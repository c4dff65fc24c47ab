#pragma once
// @brief CPU reference of RMSNorm (kernels/rms_norm.cu).

#include "kernels/params.h"

namespace inferscale {

/// out[r] = (x[r] * r) * weight in fp32, r = 1 / sqrt(sum(x[r]^2) / cols + eps) computed in
/// double and rounded to fp32.
void rms_norm_reference(const RmsNormParams& p);

}  // namespace inferscale
