#pragma once
// @brief CPU reference of the SwiGLU activation (kernels/silu_mul.cu).

#include "kernels/params.h"

namespace inferscale {

/// out[r, c] = g / (1 + exp(-g)) * u with g = s * gate_up[r, c], u = s * gate_up[r, cols + c],
/// in fp32; s = rms_scale_reference(norm, r) (1 without `norm`).
void silu_mul_reference(const SiluMulParams& p);

}  // namespace inferscale
