#pragma once
// @brief CPU reference of RMSNorm (kernels/rms_norm.cu) and of the per-row scale of a folded
// RMSNorm (RmsScaleView, applied by kv_append and silu_mul).

#include "kernels/params.h"

namespace inferscale {

/// 1 / sqrt(sum(x[x0 .. x0 + cols)^2) / cols + eps), computed in double and rounded to fp32.
float rms_inv_reference(const void* x, std::int64_t x0, std::int64_t cols, float eps, DType dtype);

/// The scale of row `row` under `norm` (rms_inv_reference of that row); 1 when norm.x is null.
float rms_scale_reference(const RmsScaleView& norm, std::int64_t row, DType dtype);

/// out[r] = (x[r] * r) * weight in fp32, r = rms_inv_reference of row r.
void rms_norm_reference(const RmsNormParams& p);

}  // namespace inferscale
