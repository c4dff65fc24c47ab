#pragma once
// @brief CPU reference of the skinny matrix product (kernels/skinny_gemm.cu).

#include "kernels/params.h"

namespace inferscale {

/// out[r, j] = sum_i x[r, i] w[j, i] (+ residual[r, j]), products and sums in fp32 in order of
/// i, the residual added last, rounded once to the dtype. Any dtype (f32 included).
void skinny_gemm_reference(const SkinnyGemmParams& p);

}  // namespace inferscale
