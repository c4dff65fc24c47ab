// Dequantization of each ggml format against hand-made blocks.
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "executor/weights/ggml_quants.h"
#include "tests/catch.h"

using namespace inferscale;

namespace {

void put_u16(std::vector<std::uint8_t>& b, std::uint16_t v) {
  b.push_back(std::uint8_t(v & 0xff));
  b.push_back(std::uint8_t(v >> 8));
}

}  // namespace

TEST_CASE("fp16 and bf16 bit patterns decode to their values", "[weights]") {
  CHECK(fp16_to_float(0x3c00) == 1.0f);
  CHECK(fp16_to_float(0xc000) == -2.0f);
  CHECK(fp16_to_float(0x7bff) == 65504.0f);
  CHECK(fp16_to_float(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(fp16_to_float(0x03ff) == std::ldexp(1023.0f, -24));
  CHECK(fp16_to_float(0x3555) == Approx(0.333251953125f).epsilon(0));
  CHECK(std::isinf(fp16_to_float(0x7c00)));
  CHECK(std::isnan(fp16_to_float(0x7e00)));
  CHECK(std::signbit(fp16_to_float(0x8000)));
  CHECK(bf16_to_float(0x3f80) == 1.0f);
  CHECK(bf16_to_float(0xc0a0) == -5.0f);
  CHECK(bf16_to_float(0x3e20) == 0.15625f);
}

TEST_CASE("float_to_fp16 rounds to nearest even and round-trips every half", "[weights]") {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_float(std::uint16_t(h));
    if (std::isnan(f)) continue;
    REQUIRE(float_to_fp16(f) == h);
  }
  // Halfway between 1 and 1 + 2^-10 rounds to the even mantissa (1.0); just above rounds up.
  CHECK(float_to_fp16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);
  CHECK(float_to_fp16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)) == 0x3c01);
  CHECK(float_to_fp16(1e6f) == 0x7c00);
}

TEST_CASE("F32, F16 and BF16 tensors decode value by value", "[weights]") {
  const std::vector<float> want = {0.5f, -3.25f, 1024.0f, -0.0078125f};
  std::vector<std::uint8_t> f32(want.size() * 4);
  std::memcpy(f32.data(), want.data(), f32.size());
  std::vector<float> out(4);
  ggml_dequantize(0, f32.data(), out.data(), 4);
  CHECK(out == want);
  std::vector<std::uint8_t> f16, bf16;
  for (float v : want) {
    put_u16(f16, float_to_fp16(v));
    std::uint32_t bits;
    std::memcpy(&bits, &v, 4);
    put_u16(bf16, std::uint16_t(bits >> 16));  // these values are exact in bf16
  }
  ggml_dequantize(1, f16.data(), out.data(), 4);
  CHECK(out == want);
  ggml_dequantize(30, bf16.data(), out.data(), 4);
  CHECK(out == want);
}

TEST_CASE("Q8_0: fp16 scale times signed bytes", "[weights]") {
  std::vector<std::uint8_t> block;
  put_u16(block, 0x3800);  // d = 0.5
  for (int i = 0; i < 32; ++i) block.push_back(std::uint8_t(std::int8_t(i - 16)));
  put_u16(block, 0xc000);  // second block: d = -2
  for (int i = 0; i < 32; ++i) block.push_back(std::uint8_t(std::int8_t(i == 0 ? -128 : 127)));
  REQUIRE(block.size() == 2 * 34);
  std::vector<float> out(64);
  ggml_dequantize(8, block.data(), out.data(), 64);
  for (int i = 0; i < 32; ++i) CHECK(out[i] == 0.5f * float(i - 16));
  CHECK(out[32] == 256.0f);
  for (int i = 33; i < 64; ++i) CHECK(out[i] == -254.0f);
}

TEST_CASE("Q4_0: low nibbles are values 0..15, high nibbles 16..31, offset by 8", "[weights]") {
  std::vector<std::uint8_t> block;
  put_u16(block, 0x4000);  // d = 2
  for (int j = 0; j < 16; ++j) block.push_back(std::uint8_t(j | ((15 - j) << 4)));
  REQUIRE(block.size() == 18);
  std::vector<float> out(32);
  ggml_dequantize(2, block.data(), out.data(), 32);
  for (int j = 0; j < 16; ++j) {
    CHECK(out[j] == 2.0f * float(j - 8));
    CHECK(out[j + 16] == 2.0f * float(15 - j - 8));
  }
}

TEST_CASE("Q4_1: scale and minimum, unsigned nibbles", "[weights]") {
  std::vector<std::uint8_t> block;
  put_u16(block, 0x3400);  // d = 0.25
  put_u16(block, 0xbc00);  // m = -1
  for (int j = 0; j < 16; ++j) block.push_back(std::uint8_t(((j * 7) & 15) | ((j ^ 5) << 4)));
  REQUIRE(block.size() == 20);
  std::vector<float> out(32);
  ggml_dequantize(3, block.data(), out.data(), 32);
  for (int j = 0; j < 16; ++j) {
    CHECK(out[j] == 0.25f * float((j * 7) & 15) - 1.0f);
    CHECK(out[j + 16] == 0.25f * float(j ^ 5) - 1.0f);
  }
}

TEST_CASE("formats it cannot decode, and partial blocks, are refused", "[weights]") {
  std::vector<std::uint8_t> raw(1024, 0);
  std::vector<float> out(256);
  CHECK_THROWS_AS(ggml_dequantize(12, raw.data(), out.data(), 256), std::invalid_argument);
  CHECK_THROWS_AS(ggml_dequantize(999, raw.data(), out.data(), 32), std::invalid_argument);
  CHECK_THROWS_AS(ggml_dequantize(3, raw.data(), out.data(), 48), std::invalid_argument);
  GgmlTypeInfo info;
  REQUIRE(ggml_type_info(14, info));
  CHECK(info.name == "Q6_K");
  CHECK_FALSE(info.decodable);
}
