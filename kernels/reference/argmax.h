#pragma once
// @brief CPU reference of greedy sampling (kernels/argmax.cu).

#include "kernels/params.h"

namespace inferscale {

/// For each row, the first column holding its largest value; a NaN beats any number and the
/// first NaN wins (ArgmaxParams).
void argmax_reference(const ArgmaxParams& p);

}  // namespace inferscale
