#include "kernels/reference/skinny_gemm.h"

#include "kernels/reference/numeric.h"

namespace inferscale {

void skinny_gemm_reference(const SkinnyGemmParams& p) {
  for (std::int64_t r = 0; r < p.rows; ++r) {
    for (std::int64_t j = 0; j < p.n; ++j) {
      float acc = 0.0f;
      for (std::int64_t i = 0; i < p.k; ++i) {
        acc += load_elem(p.x, r * p.x_stride + i, p.dtype) *
               load_elem(p.w, j * p.w_stride + i, p.dtype);
      }
      const std::int64_t o = r * p.out_stride + j;
      if (p.residual != nullptr) acc += load_elem(p.residual, o, p.dtype);
      store_elem(p.out, o, p.dtype, acc);
    }
  }
}

}  // namespace inferscale
