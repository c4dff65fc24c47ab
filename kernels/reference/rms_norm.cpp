#include "kernels/reference/rms_norm.h"

#include <cmath>

#include "kernels/reference/numeric.h"

namespace inferscale {

float rms_inv_reference(const void* x, std::int64_t x0, std::int64_t cols, float eps, DType dtype) {
  double sum = 0.0;  // the exact-ish sum: any fp32 reduction order is within rounding of it
  for (std::int64_t c = 0; c < cols; ++c) {
    const double v = load_elem(x, x0 + c, dtype);
    sum += v * v;
  }
  return float(1.0 / std::sqrt(sum / double(cols) + double(eps)));
}

float rms_scale_reference(const RmsScaleView& norm, std::int64_t row, DType dtype) {
  if (norm.x == nullptr) return 1.0f;
  return rms_inv_reference(norm.x, row * norm.stride, norm.cols, norm.eps, dtype);
}

void rms_norm_reference(const RmsNormParams& p) {
  for (std::int64_t r = 0; r < p.rows; ++r) {
    const std::int64_t x0 = r * p.x_stride, o0 = r * p.out_stride;
    const float inv_rms = rms_inv_reference(p.x, x0, p.cols, p.eps, p.dtype);
    for (std::int64_t c = 0; c < p.cols; ++c) {
      const float v = load_elem(p.x, x0 + c, p.dtype) * inv_rms;
      store_elem(p.out, o0 + c, p.dtype, v * load_elem(p.weight, c, p.dtype));
    }
  }
}

}  // namespace inferscale
