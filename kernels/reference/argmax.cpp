#include "kernels/reference/argmax.h"

#include <cmath>

#include "kernels/reference/numeric.h"

namespace inferscale {

void argmax_reference(const ArgmaxParams& p) {
  for (std::int64_t r = 0; r < p.rows; ++r) {
    const std::int64_t base = r * p.stride;
    std::int64_t best = 0;
    float best_v = load_elem(p.in, base, p.dtype);
    for (std::int64_t c = 1; c < p.cols && !std::isnan(best_v); ++c) {
      const float v = load_elem(p.in, base + c, p.dtype);
      if (std::isnan(v) || v > best_v) {
        best = c;
        best_v = v;
      }
    }
    p.out[r] = std::int32_t(best);
  }
}

}  // namespace inferscale
