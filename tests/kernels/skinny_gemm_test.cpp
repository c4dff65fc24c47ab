// GPU: the skinny matrix product against its reference over rows (one and two m-tiles, partial
// tiles), output widths that leave partial blocks and n-tiles, k from one chunk to Llama's, padded
// strides, no residual / a separate residual / the residual in place, bf16 and fp16. The kernel
// adds the same products in another order, so an element may differ from the reference by the
// fp32 accumulation error and one rounding of the dtype; the tolerance allows that and no more.
// Padding between output rows must stay untouched; with K split over several blocks, the split
// counters must be back at zero after the launch.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cuda_check.h"
#include "kernels/reference/numeric.h"
#include "kernels/reference/skinny_gemm.h"
#include "kernels/skinny_gemm.cuh"
#include "tests/catch.h"
#include "tests/kernels/kernels_test_util.h"

using namespace inferscale;
using test::DeviceBuffer;

namespace {

enum class Residual { kNone, kSeparate, kInPlace };

/// Spacing of the dtype's values around |v| (its unit in the last place).
double ulp(double v, DType dt) {
  const int mantissa = dt == DType::kBF16 ? 7 : 10;
  const int min_exp = dt == DType::kBF16 ? -126 : -14;
  const int e = v == 0.0 ? min_exp : std::max(min_exp, int(std::floor(std::log2(std::fabs(v)))));
  return std::ldexp(1.0, e - mantissa);
}

struct Case {
  std::int64_t rows, n, k;
  int x_pad, w_pad, out_pad;
};

void run_case(const Case& c, DType dt, Residual res, int variant, int splits, std::mt19937& rng) {
  SkinnyGemmParams p;
  p.variant = variant;
  p.rows = c.rows;
  p.n = c.n;
  p.k = c.k;
  p.x_stride = c.k + c.x_pad;
  p.w_stride = c.k + c.w_pad;
  p.out_stride = c.n + c.out_pad;
  p.dtype = dt;
  const auto x = test::random_elems(std::size_t(p.rows * p.x_stride), dt, rng);
  const auto w = test::random_elems(std::size_t(p.n * p.w_stride), dt, rng, 0.05f);
  const std::size_t out_elems = std::size_t(p.rows * p.out_stride);
  const auto init = res == Residual::kInPlace ? test::random_elems(out_elems, dt, rng)
                                              : test::poison_elems(out_elems, dt);
  const auto resid = test::random_elems(out_elems, dt, rng);

  // Reference on the host.
  std::vector<std::uint8_t> want = init;
  SkinnyGemmParams h = p;
  h.x = x.data();
  h.w = w.data();
  h.out = want.data();
  h.residual =
      res == Residual::kNone ? nullptr : (res == Residual::kInPlace ? want.data() : resid.data());
  skinny_gemm_reference(h);

  DeviceBuffer dx(x), dw(w), dout(init), dres(resid);
  SkinnyGemmParams d = p;
  d.x = dx.get();
  d.w = dw.get();
  d.out = dout.get();
  d.residual =
      res == Residual::kNone ? nullptr : (res == Residual::kInPlace ? dout.get() : dres.get());
  REQUIRE(skinny_gemm_supported(d));
  INFERSCALE_CUDA_CHECK(skinny_gemm_launch(d, nullptr));
  test::device_sync();
  const auto got = dout.download();

  std::int64_t bad = 0, padding_changed = 0;
  double worst = 0.0;
  for (std::int64_t r = 0; r < p.rows; ++r) {
    for (std::int64_t j = 0; j < p.out_stride; ++j) {
      const std::int64_t o = r * p.out_stride + j;
      const double g = load_elem(got.data(), o, dt), e = load_elem(want.data(), o, dt);
      if (j >= p.n) {  // padding: kernel and reference both leave it as it was
        padding_changed += g != load_elem(init.data(), o, dt);
        continue;
      }
      double terms = 0.0;  // sum of |products|: the scale of the accumulation error
      for (std::int64_t i = 0; i < p.k; ++i) {
        terms += std::fabs(double(load_elem(x.data(), r * p.x_stride + i, dt)) *
                           load_elem(w.data(), j * p.w_stride + i, dt));
      }
      const double tol = 4.0 * double(p.k) * std::ldexp(1.0, -24) * terms +
                         ulp(std::max(std::fabs(g), std::fabs(e)), dt);
      worst = std::max(worst, std::fabs(g - e) / tol);
      bad += std::fabs(g - e) > tol;
    }
  }
  INFO(dtype_name(dt) << " variant " << variant << " splits " << splits << " rows " << p.rows
                      << " n " << p.n << " k " << p.k << " pads " << c.x_pad << "/" << c.w_pad
                      << "/" << c.out_pad << " residual " << int(res)
                      << ": worst |diff| / tolerance " << worst);
  CHECK(bad == 0);
  CHECK(padding_changed == 0);
}

}  // namespace

TEST_CASE(
    "skinny_gemm kernel matches its reference within accumulation error, every variant, K split "
    "or not") {
  if (!test::cuda_device_available()) INFERSCALE_SKIP("no CUDA device");
  std::mt19937 rng(7);
  const Case cases[] = {{1, 8, 32, 0, 0, 0},     {1, 40, 96, 8, 0, 3},
                        {7, 100, 256, 0, 8, 0},  {16, 256, 512, 8, 8, 5},
                        {17, 96, 64, 0, 0, 0},   {24, 300, 1024, 16, 0, 1},
                        {32, 64, 4096, 0, 0, 0}, {32, 520, 2048, 8, 16, 7}};
  for (const DType dt : {DType::kBF16, DType::kF16}) {
    for (const Case& c : cases) {
      for (const Residual res : {Residual::kNone, Residual::kSeparate, Residual::kInPlace}) {
        // Every variant (block width, loads in flight); one block per column, and K split over
        // 3 (some splits of short K get no chunk) and over the count the GPU executor would
        // pick on an H200 (132 SMs).
        for (int variant = 0; variant < kSkinnyGemmVariants; ++variant) {
          for (const int splits : {1, 3, -1}) {
            SkinnyGemmParams q;
            q.n = c.n;
            q.k = c.k;
            q.variant = variant;
            run_case(c, dt, res, variant, splits > 0 ? splits : skinny_gemm_splits(q, 132), rng);
          }
        }
      }
    }
  }
}

TEST_CASE("skinny_gemm kernel refuses what it cannot take, without a launch") {
  if (!test::cuda_device_available()) INFERSCALE_SKIP("no CUDA device");
  std::vector<std::uint16_t> host(64 * 128, 0);
  DeviceBuffer x(host), w(host), out(host);
  SkinnyGemmParams p;
  p.x = x.get();
  p.w = w.get();
  p.out = out.get();
  p.rows = 4;
  p.n = 16;
  p.k = 64;
  p.x_stride = p.w_stride = 64;
  p.out_stride = 16;
  p.dtype = DType::kBF16;
  REQUIRE(skinny_gemm_supported(p));
  auto refused = [](SkinnyGemmParams q) {
    CHECK_FALSE(skinny_gemm_supported(q));
    CHECK(skinny_gemm_launch(q, nullptr) == cudaErrorInvalidValue);
  };
  SkinnyGemmParams q = p;
  q.dtype = DType::kF32;
  refused(q);
  q = p;
  q.rows = kSkinnyGemmMaxRows + 1;
  refused(q);
  q = p;
  q.k = 48;  // not a multiple of 32
  refused(q);
  q = p;
  q.x_stride = 68;  // rows not 16-byte aligned
  refused(q);
  q = p;
  q.w = static_cast<const std::uint8_t*>(w.get()) + 2;
  refused(q);
  q = p;
  q.splits = 2;  // no workspace or counters
  refused(q);
  q = p;
  q.variant = kSkinnyGemmVariants;  // no such variant
  refused(q);
  test::device_sync();
}
