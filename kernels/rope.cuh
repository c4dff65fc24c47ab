#pragma once
// @brief Rotary position embedding on raw pointers: one kernel, both directions.

#include <cuda_runtime_api.h>

#include "kernels/params.h"

namespace inferscale {

/// Rotates (Forward) or un-rotates the rows of p.in into p.out at p.positions, from the fp32
/// table. Preconditions: head_dim even, |positions[t]| < table.positions. Reference:
/// rope_rotate_reference (kernels/reference/rope.h), bit-exact.
template <bool Forward>
cudaError_t rope_rotate_launch(const RopeParams& p, cudaStream_t stream);

}  // namespace inferscale
