// Fact KV storage formats: fp8 e4m3 rounding on its whole value grid, and the per-vector round
// trip's error bounds for fp8 and int8.
#include <cmath>
#include <random>
#include <vector>

#include "kernels/reference/kv_quant.h"
#include "tests/catch.h"

using namespace inferscale;

namespace {

/// The 127 non-negative finite e4m3 values but 0, in increasing order.
std::vector<float> e4m3_positive_values() {
  std::vector<float> v;
  for (int m = 1; m < 8; ++m) v.push_back(std::ldexp(float(m), -9));  // subnormals
  for (int e = -6; e <= 8; ++e) {
    for (int m = 0; m < 8; ++m) {
      const float x = std::ldexp(1.0f + float(m) / 8, e);
      if (x <= 448.0f) v.push_back(x);
    }
  }
  return v;
}

}  // namespace

TEST_CASE("fp8 e4m3 rounding keeps every representable value and rounds ties to even") {
  const std::vector<float> grid = e4m3_positive_values();
  REQUIRE(grid.size() == 7 + 15 * 8 - 1);  // 448 = 1.75 * 2^8 is the largest; 1.875 * 2^8 is NaN
  for (std::size_t i = 0; i < grid.size(); ++i) {
    REQUIRE(fp8_e4m3_round(grid[i]) == grid[i]);
    REQUIRE(fp8_e4m3_round(-grid[i]) == -grid[i]);
    if (i + 1 < grid.size()) {
      const float mid = (grid[i] + grid[i + 1]) / 2;  // exact in fp32
      // Ties go to the even mantissa: of two neighbours exactly one has an even last bit.
      const float r = fp8_e4m3_round(mid);
      REQUIRE((r == grid[i] || r == grid[i + 1]));
      REQUIRE(fp8_e4m3_round(std::nextafter(mid, 0.0f)) == grid[i]);
      REQUIRE(fp8_e4m3_round(std::nextafter(mid, 1e9f)) == grid[i + 1]);
    }
  }
  CHECK(fp8_e4m3_round(1.0625f) == 1.0f);   // tie between 1 and 1.125: even mantissa 0
  CHECK(fp8_e4m3_round(1.1875f) == 1.25f);  // tie between 1.125 and 1.25: even mantissa 2
  CHECK(fp8_e4m3_round(std::ldexp(1.0f, -10)) == 0.0f);  // half the smallest subnormal
  CHECK(fp8_e4m3_round(1000.0f) == 448.0f);              // saturates
  CHECK(fp8_e4m3_round(0.0f) == 0.0f);
}

TEST_CASE("the per-vector round trip keeps the largest value and bounds every error") {
  std::mt19937 rng(7);
  std::lognormal_distribution<float> mag(0.0f, 2.0f);
  std::bernoulli_distribution neg(0.5);
  const std::int64_t vectors = 64, dim = 128;
  std::vector<float> x(std::size_t(vectors * dim));
  for (float& v : x) v = (neg(rng) ? -1.0f : 1.0f) * mag(rng);
  for (KvFormat f : {KvFormat::kFp8, KvFormat::kInt8, KvFormat::kBf16}) {
    std::vector<float> y = x;
    kv_quant_round_trip_reference(y.data(), vectors, dim, f);
    for (std::int64_t v = 0; v < vectors; ++v) {
      float amax = 0;
      for (std::int64_t i = 0; i < dim; ++i) amax = std::max(amax, std::fabs(x[v * dim + i]));
      for (std::int64_t i = 0; i < dim; ++i) {
        const float a = x[v * dim + i], b = y[v * dim + i];
        float bound = 0;
        if (f == KvFormat::kFp8) {
          bound = std::fabs(a) / 16 + amax / 448 * std::ldexp(1.0f, -10);  // 3 bits; subnormals
        } else if (f == KvFormat::kInt8) {
          bound = amax / 127 / 2 * 1.0001f;
        } else {
          bound = std::fabs(a) / 256;
        }
        REQUIRE(std::fabs(a - b) <= bound * 1.0001f + 1e-30f);
      }
    }
  }
  std::vector<float> same = x;
  kv_quant_round_trip_reference(same.data(), vectors, dim, KvFormat::kNative);
  CHECK(same == x);
}

TEST_CASE("KV formats: names and stored bytes per head vector") {
  CHECK(parse_kv_format("fp8") == KvFormat::kFp8);
  CHECK(parse_kv_format("int8") == KvFormat::kInt8);
  CHECK(parse_kv_format("bf16") == KvFormat::kBf16);
  CHECK_THROWS_WITH(parse_kv_format("fp4"), Catch::Contains("expected bf16, fp8 or int8"));
  CHECK(kv_format_vector_bytes(KvFormat::kBf16, 128, 4) == 256);
  CHECK(kv_format_vector_bytes(KvFormat::kFp8, 128, 2) == 132);
  CHECK(kv_format_vector_bytes(KvFormat::kNative, 128, 4) == 512);
}
