#pragma once
// @brief SwiGLU activation on raw pointers: out = silu(gate) * up, optionally with gate and up
// first scaled by the row's 1 / rms (the MLP RMSNorm folded into the weights).

#include <cuda_runtime_api.h>

#include "kernels/params.h"

namespace inferscale {

/// Reference: silu_mul_reference (kernels/reference/silu_mul.h). The device expf differs from
/// the host's by up to 2 ulp: results agree within a few fp32 ulps (1 ulp after rounding to
/// bf16/fp16), not bit for bit. With `norm`, the device's fp32 1 / rms also differs from the
/// reference's by a few fp32 ulps.
cudaError_t silu_mul_launch(const SiluMulParams& p, cudaStream_t stream);

}  // namespace inferscale
