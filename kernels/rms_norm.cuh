#pragma once
// @brief RMSNorm on raw pointers: one block per row.

#include <cuda_runtime_api.h>

#include "kernels/params.h"

namespace inferscale {

/// Reference: rms_norm_reference (kernels/reference/rms_norm.h). The sum of squares is reduced
/// in a different order, so results agree to fp32 rounding (1 ulp of the output dtype after
/// rounding), not bit for bit.
cudaError_t rms_norm_launch(const RmsNormParams& p, cudaStream_t stream);

}  // namespace inferscale
