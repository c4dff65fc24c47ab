#include "kernels/reference/silu_mul.h"

#include <cmath>

#include "kernels/reference/numeric.h"

namespace inferscale {

void silu_mul_reference(const SiluMulParams& p) {
  for (std::int64_t r = 0; r < p.rows; ++r) {
    const std::int64_t i0 = r * p.in_stride, o0 = r * p.out_stride;
    for (std::int64_t c = 0; c < p.cols; ++c) {
      const float g = load_elem(p.gate_up, i0 + c, p.dtype);
      const float u = load_elem(p.gate_up, i0 + p.cols + c, p.dtype);
      store_elem(p.out, o0 + c, p.dtype, g / (1.0f + std::exp(-g)) * u);
    }
  }
}

}  // namespace inferscale
