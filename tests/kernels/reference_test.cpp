// CPU tests of the kernels' references: the 16-bit conversions, the rotary algebra that Chunked
// RoPE relies on (rotate then un-rotate is the identity; a delta shift of a rotated key equals
// rotating the original key directly), and greedy sampling's ties and NaNs.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/reference/argmax.h"
#include "kernels/reference/numeric.h"
#include "kernels/reference/rope.h"
#include "tests/catch.h"

using namespace inferscale;

namespace {

struct Table {
  std::vector<float> cos, sin;
  RopeTableView view() const { return {cos.data(), sin.data(), std::int32_t(cos.size() / half)}; }
  std::int64_t half = 0;
};

Table make_table(const RopeTableSpec& spec) {
  Table t;
  t.half = spec.head_dim / 2;
  t.cos.resize(std::size_t(spec.positions) * t.half);
  t.sin.resize(t.cos.size());
  rope_table_build(spec, t.cos.data(), t.sin.data());
  return t;
}

double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

RopeParams params(const std::vector<float>& in, std::vector<float>& out,
                  const std::vector<std::int32_t>& pos, const Table& t, int heads, int d,
                  RopeStyle style) {
  RopeParams p;
  p.in = in.data();
  p.out = out.data();
  p.positions = pos.data();
  p.table = t.view();
  p.tokens = std::int32_t(pos.size());
  p.heads = heads;
  p.head_dim = d;
  p.head_stride = d;
  p.token_stride = std::int64_t(heads) * d;
  p.style = style;
  return p;
}

}  // namespace

TEST_CASE("fp16 conversion round-trips every half and rounds to nearest even") {
  for (std::uint32_t h = 0; h < 0x10000u; ++h) {
    const std::uint16_t x = std::uint16_t(h);
    if ((x & 0x7c00u) == 0x7c00u && (x & 0x3ffu) != 0) continue;  // NaN payloads
    REQUIRE(float_to_f16(f16_to_float(x)) == x);
  }
  CHECK(f16_to_float(0x3c00u) == 1.0f);
  CHECK(f16_to_float(0x0001u) == std::ldexp(1.0f, -24));
  CHECK(float_to_f16(65504.0f) == 0x7bffu);
  CHECK(float_to_f16(65520.0f) == 0x7c00u);                          // ties away from max: infinity
  CHECK(float_to_f16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00u);      // tie to even (down)
  CHECK(float_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02u);  // tie to even (up)
  CHECK(float_to_f16(std::ldexp(1.0f, -25)) == 0x0000u);             // half the smallest: to even
  CHECK(float_to_f16(std::ldexp(1.5f, -25)) == 0x0001u);
#if defined(__FLT16_MAX__)
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::uint32_t> bits;
  for (int i = 0; i < 200000; ++i) {
    float f = bits_float(bits(rng));
    if (std::isnan(f)) continue;
    int exponent = 0;
    f = std::ldexp(std::frexp(f, &exponent), int(bits(rng) % 48) - 30);  // around half's range
    const _Float16 ref = static_cast<_Float16>(f);
    std::uint16_t ref_bits;
    std::memcpy(&ref_bits, &ref, 2);
    REQUIRE(float_to_f16(f) == ref_bits);
  }
#endif
}

TEST_CASE("bf16 conversion rounds to nearest even") {
  CHECK(float_to_bf16(1.0f) == 0x3f80u);
  CHECK(float_to_bf16(bits_float(0x3f808000u)) == 0x3f80u);  // tie, even stays
  CHECK(float_to_bf16(bits_float(0x3f818000u)) == 0x3f82u);  // tie, odd rounds up
  CHECK(float_to_bf16(bits_float(0x3f808001u)) == 0x3f81u);
  for (std::uint32_t h = 0; h < 0x10000u; h += 7) {
    const std::uint16_t x = std::uint16_t(h);
    if ((x & 0x7f80u) == 0x7f80u && (x & 0x7fu) != 0) continue;
    REQUIRE(float_to_bf16(bf16_to_float(x)) == x);
  }
}

TEST_CASE("llama3 scaling keeps short wavelengths and slows long ones") {
  RopeTableSpec plain{128, 16, 500000.0};
  RopeTableSpec scaled = plain;
  scaled.scaling_factor = 8.0;
  const auto a = rope_inv_freq(plain), b = rope_inv_freq(scaled);
  REQUIRE(a.size() == 64);
  CHECK(b[0] == a[0]);                                    // wavelength 2*pi << 2048: kept
  CHECK(std::abs(b[63] - a[63] / 8.0) <= 1e-12 * a[63]);  // longest: divided by the factor
  bool blended = false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(b[i] <= a[i]);
    CHECK(b[i] >= a[i] / 8.0 * (1 - 1e-12));
    blended |= b[i] < a[i] && b[i] > a[i] / 8.0 * (1 + 1e-9);
  }
  CHECK(blended);
}

TEST_CASE("rotate then un-rotate is the identity, and a delta shift equals a direct rotation") {
  const int heads = 3;
  for (RopeStyle style : {RopeStyle::kNeox, RopeStyle::kGptj}) {
    for (int d : {16, 64, 128}) {
      RopeTableSpec spec{d, 4096, 500000.0, 8.0};
      const Table table = make_table(spec);
      std::mt19937 rng(11 + d);
      std::normal_distribution<float> normal;
      std::uniform_int_distribution<int> pos_dist(0, 1500);
      const int tokens = 37;
      std::vector<float> k(std::size_t(tokens) * heads * d);
      for (float& x : k) x = normal(rng);
      std::vector<std::int32_t> p0(tokens), delta(tokens), p1(tokens), neg(tokens);
      for (int t = 0; t < tokens; ++t) {
        p0[t] = pos_dist(rng);
        delta[t] = pos_dist(rng) - 750;  // forwards and backwards shifts
        p1[t] = p0[t] + delta[t];
        if (p1[t] < 0) {
          p1[t] = -p1[t];
          delta[t] = p1[t] - p0[t];
        }
        neg[t] = -p0[t];
      }
      CAPTURE(rope_style_name(style), d);

      std::vector<float> rotated(k.size()), back(k.size());
      rope_rotate_reference<true>(params(k, rotated, p0, table, heads, d, style));
      rope_rotate_reference<false>(params(rotated, back, p0, table, heads, d, style));
      CHECK(rel_l2(back, k) < 1e-6);
      CHECK(rel_l2(rotated, k) > 0.1);  // the rotation did something

      // Rotation by -p is the inverse rotation, bit for bit.
      std::vector<float> back_neg(k.size());
      rope_rotate_reference<true>(params(rotated, back_neg, neg, table, heads, d, style));
      CHECK(back_neg == back);

      // Delta: rotate(rotate(k, p0), p1 - p0) vs rotate(k, p1).
      std::vector<float> shifted(k.size()), direct(k.size());
      rope_rotate_reference<true>(params(rotated, shifted, delta, table, heads, d, style));
      rope_rotate_reference<true>(params(k, direct, p1, table, heads, d, style));
      CHECK(rel_l2(shifted, direct) < 1e-6);
      CHECK(rel_l2(shifted, direct) > 0.0);  // not bit-exact: why pre-RoPE storage exists
    }
  }
}

TEST_CASE("the rotation acts on the documented pairs") {
  // NeoX pairs (i, i + d/2); GPT-J pairs (2i, 2i + 1). With position 1 and d = 4 the angles are
  // theta^0 = 1 rad for pair 0 and theta^-1/2 for pair 1.
  RopeTableSpec spec{4, 2, 100.0};
  const Table table = make_table(spec);
  const std::vector<float> x = {1, 0, 0, 0};
  const std::vector<std::int32_t> pos = {1};
  std::vector<float> y(4);
  rope_rotate_reference<true>(params(x, y, pos, table, 1, 4, RopeStyle::kNeox));
  CHECK(std::abs(y[0] - std::cos(1.0)) < 1e-6);
  CHECK(std::abs(y[2] - std::sin(1.0)) < 1e-6);
  CHECK(y[1] == 0.0f);
  rope_rotate_reference<true>(params(x, y, pos, table, 1, 4, RopeStyle::kGptj));
  CHECK(std::abs(y[0] - std::cos(1.0)) < 1e-6);
  CHECK(std::abs(y[1] - std::sin(1.0)) < 1e-6);
  CHECK(y[2] == 0.0f);
}

TEST_CASE("argmax reference takes the first maximum and the first NaN of each row") {
  const float nan = std::nanf(""), inf = INFINITY;
  // Rows of 5 at a stride of 6: the padding column holds a value larger than any, never read.
  const std::vector<std::vector<float>> rows = {
      {1, 3, 3, 2, 0},  {-inf, -inf, -inf, -inf, -inf}, {1, nan, 5, nan, 9},
      {2, 1, 2, -1, 2}, {-3, -2, -1, -1, inf},          {0, 0, 0, 0, 0}};
  const std::vector<std::int32_t> want = {1, 0, 1, 0, 4, 0};
  for (const DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
    CAPTURE(dtype_name(dt));
    std::vector<std::uint8_t> in(rows.size() * 6 * std::size_t(dtype_bytes(dt)));
    for (std::size_t r = 0; r < rows.size(); ++r) {
      for (std::size_t c = 0; c < 5; ++c)
        store_elem(in.data(), std::int64_t(r * 6 + c), dt, rows[r][c]);
      store_elem(in.data(), std::int64_t(r * 6 + 5), dt, 1000.0f);
    }
    std::vector<std::int32_t> out(rows.size(), -1);
    ArgmaxParams p;
    p.in = in.data();
    p.out = out.data();
    p.rows = std::int64_t(rows.size());
    p.cols = 5;
    p.stride = 6;
    p.dtype = dt;
    argmax_reference(p);
    CHECK(out == want);
  }
}
