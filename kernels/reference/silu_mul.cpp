#include "kernels/reference/silu_mul.h"

#include <cmath>

#include "kernels/reference/numeric.h"
#include "kernels/reference/rms_norm.h"

namespace inferscale {

void silu_mul_reference(const SiluMulParams& p) {
  const bool scaled = p.norm.x != nullptr;
  for (std::int64_t r = 0; r < p.rows; ++r) {
    const std::int64_t i0 = r * p.in_stride, o0 = r * p.out_stride;
    const float s = rms_scale_reference(p.norm, r, p.dtype);
    for (std::int64_t c = 0; c < p.cols; ++c) {
      float g = load_elem(p.gate_up, i0 + c, p.dtype);
      float u = load_elem(p.gate_up, i0 + p.cols + c, p.dtype);
      if (scaled) g *= s, u *= s;
      store_elem(p.out, o0 + c, p.dtype, g / (1.0f + std::exp(-g)) * u);
    }
  }
}

}  // namespace inferscale
