#pragma once
// @brief The round trip of stored fact KV through its storage format on tensors (any device);
// kernels/reference/kv_quant.cpp defines the rounding, tests compare the two bit for bit.

#include <ATen/ATen.h>

#include "kernels/reference/kv_quant.h"

namespace inferscale {

/// `x` [..., head_dim] (any float dtype, any device) stored in format `f` and loaded back, in
/// place: computed in fp32 and written back in x's dtype.
void kv_quant_round_trip(at::Tensor x, KvFormat f);

}  // namespace inferscale
