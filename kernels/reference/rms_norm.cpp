#include "kernels/reference/rms_norm.h"

#include <cmath>

#include "kernels/reference/numeric.h"

namespace inferscale {

void rms_norm_reference(const RmsNormParams& p) {
  for (std::int64_t r = 0; r < p.rows; ++r) {
    const std::int64_t x0 = r * p.x_stride, o0 = r * p.out_stride;
    double sum = 0.0;  // the exact-ish sum: any fp32 reduction order is within rounding of it
    for (std::int64_t c = 0; c < p.cols; ++c) {
      const double v = load_elem(p.x, x0 + c, p.dtype);
      sum += v * v;
    }
    const float inv_rms = float(1.0 / std::sqrt(sum / double(p.cols) + double(p.eps)));
    for (std::int64_t c = 0; c < p.cols; ++c) {
      const float v = load_elem(p.x, x0 + c, p.dtype) * inv_rms;
      store_elem(p.out, o0 + c, p.dtype, v * load_elem(p.weight, c, p.dtype));
    }
  }
}

}  // namespace inferscale
