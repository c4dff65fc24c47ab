// CPU: what the skinny matrix product's reference computes: out = x w^T (+ residual) with w a
// linear layer's weight ([n, k]), strides respected, the residual added in place or from its
// own buffer, and one rounding of a 16-bit output.
#include <cstdint>
#include <vector>

#include "kernels/reference/numeric.h"
#include "kernels/reference/skinny_gemm.h"
#include "tests/catch.h"

using namespace inferscale;

TEST_CASE("skinny_gemm reference multiplies rows by a weight's transpose, residual added last") {
  // x [2, 3] at stride 4; w [2, 3] at stride 3; out [2, 2] at stride 3 (one padding column).
  const std::vector<float> x = {1, 2, 3, -99, 4, 5, 6, -99};
  const std::vector<float> w = {1, 0, -1, 0.5f, 0.25f, 2};
  SkinnyGemmParams p;
  p.x = x.data();
  p.w = w.data();
  p.rows = 2;
  p.n = 2;
  p.k = 3;
  p.x_stride = 4;
  p.w_stride = 3;
  p.out_stride = 3;
  p.dtype = DType::kF32;

  std::vector<float> out(6, 7.0f);
  p.out = out.data();
  skinny_gemm_reference(p);
  // Row 0: (1 - 3, 0.5 + 0.5 + 6); row 1: (4 - 6, 2 + 1.25 + 12).
  CHECK(out == std::vector<float>{-2, 7, 7, -2, 15.25f, 7});

  const std::vector<float> res = {10, 20, 7, 30, 40, 7};  // padding as out's
  p.residual = res.data();
  skinny_gemm_reference(p);
  CHECK(out == std::vector<float>{8, 27, 7, 28, 55.25f, 7});

  std::vector<float> in_place = res;  // out == residual
  p.out = in_place.data();
  p.residual = in_place.data();
  skinny_gemm_reference(p);
  CHECK(in_place == out);
}

TEST_CASE("skinny_gemm reference rounds a 16-bit output once, after the residual") {
  // 1 + 2^-8 + 2^-8: each addition alone rounds back to 1 in bf16; the fp32 sum does not.
  std::vector<std::uint16_t> x = {float_to_bf16(1.0f), float_to_bf16(1.0f)};
  std::vector<std::uint16_t> w = {float_to_bf16(0.00390625f), float_to_bf16(0.00390625f)};
  std::vector<std::uint16_t> out = {float_to_bf16(1.0f)};
  SkinnyGemmParams p;
  p.x = x.data();
  p.w = w.data();
  p.out = out.data();
  p.residual = out.data();
  p.rows = 1;
  p.n = 1;
  p.k = 2;
  p.x_stride = p.w_stride = 2;
  p.out_stride = 1;
  p.dtype = DType::kBF16;
  skinny_gemm_reference(p);
  CHECK(bf16_to_float(out[0]) == 1.0078125f);
}
