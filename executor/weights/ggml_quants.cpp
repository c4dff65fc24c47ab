#include "executor/weights/ggml_quants.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace inferscale {

namespace {

constexpr std::uint32_t kQk = 32;  // values per block of the Q formats

std::uint16_t load_u16(const std::uint8_t* p) {
  return std::uint16_t(p[0] | (p[1] << 8));
}

float load_f32(const std::uint8_t* p) {
  std::uint32_t bits = std::uint32_t(p[0]) | (std::uint32_t(p[1]) << 8) |
                       (std::uint32_t(p[2]) << 16) | (std::uint32_t(p[3]) << 24);
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace

bool ggml_type_info(std::uint32_t type, GgmlTypeInfo& out) {
  switch (type) {
    case 0:
      out = {"F32", 1, 4, true};
      return true;
    case 1:
      out = {"F16", 1, 2, true};
      return true;
    case 2:
      out = {"Q4_0", kQk, 2 + kQk / 2, true};
      return true;
    case 3:
      out = {"Q4_1", kQk, 4 + kQk / 2, true};
      return true;
    case 6:
      out = {"Q5_0", kQk, 2 + 4 + kQk / 2, false};
      return true;
    case 7:
      out = {"Q5_1", kQk, 4 + 4 + kQk / 2, false};
      return true;
    case 8:
      out = {"Q8_0", kQk, 2 + kQk, true};
      return true;
    case 9:
      out = {"Q8_1", kQk, 4 + kQk, false};
      return true;
    case 10:
      out = {"Q2_K", 256, 84, false};
      return true;
    case 11:
      out = {"Q3_K", 256, 110, false};
      return true;
    case 12:
      out = {"Q4_K", 256, 144, false};
      return true;
    case 13:
      out = {"Q5_K", 256, 176, false};
      return true;
    case 14:
      out = {"Q6_K", 256, 210, false};
      return true;
    case 15:
      out = {"Q8_K", 256, 292, false};
      return true;
    case 24:
      out = {"I8", 1, 1, false};
      return true;
    case 25:
      out = {"I16", 1, 2, false};
      return true;
    case 26:
      out = {"I32", 1, 4, false};
      return true;
    case 27:
      out = {"I64", 1, 8, false};
      return true;
    case 28:
      out = {"F64", 1, 8, false};
      return true;
    case 30:
      out = {"BF16", 1, 2, true};
      return true;
    default:
      return false;
  }
}

float fp16_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h >> 15) << 31;
  const std::uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  std::uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: mant * 2^-24
      const float v = std::ldexp(float(mant), -24);
      return sign ? -v : v;
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

float bf16_to_float(std::uint16_t b) {
  const std::uint32_t bits = std::uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

std::uint16_t float_to_fp16(float value) {
  std::uint32_t x;
  std::memcpy(&x, &value, sizeof x);
  const std::uint16_t sign = std::uint16_t((x >> 16) & 0x8000);
  const std::uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return std::uint16_t(sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0));
  if (abs >= 0x477ff000u) return std::uint16_t(sign | 0x7c00);  // rounds past 65504: inf
  if (abs < 0x38800000u) {  // below the smallest normal half: subnormal or zero
    const float a = std::fabs(value);
    return std::uint16_t(sign | std::uint16_t(std::nearbyint(a * 16777216.0f)));
  }
  // Normal: drop 13 mantissa bits with round-to-nearest-even.
  const std::uint32_t rounded = abs + 0xfff + ((abs >> 13) & 1);
  return std::uint16_t(sign | ((rounded - 0x38000000u) >> 13));
}

void ggml_dequantize(std::uint32_t type, const std::uint8_t* src, float* dst, std::uint64_t n) {
  GgmlTypeInfo info;
  if (!ggml_type_info(type, info) || !info.decodable) {
    throw std::invalid_argument("ggml type " +
                                (info.name.empty() ? std::to_string(type) : info.name) +
                                " cannot be dequantized (F32, F16, BF16, Q8_0, Q4_0, Q4_1 can)");
  }
  if (n % info.block_elements != 0) {
    throw std::invalid_argument("ggml_dequantize: " + std::to_string(n) +
                                " values are not whole blocks of " + info.name);
  }
  switch (GgmlType(type)) {
    case GgmlType::kF32:
      for (std::uint64_t i = 0; i < n; ++i) dst[i] = load_f32(src + 4 * i);
      return;
    case GgmlType::kF16:
      for (std::uint64_t i = 0; i < n; ++i) dst[i] = fp16_to_float(load_u16(src + 2 * i));
      return;
    case GgmlType::kBF16:
      for (std::uint64_t i = 0; i < n; ++i) dst[i] = bf16_to_float(load_u16(src + 2 * i));
      return;
    case GgmlType::kQ8_0:
      for (std::uint64_t b = 0; b < n / kQk; ++b, src += info.block_bytes, dst += kQk) {
        const float d = fp16_to_float(load_u16(src));
        for (std::uint32_t i = 0; i < kQk; ++i) dst[i] = d * float(std::int8_t(src[2 + i]));
      }
      return;
    case GgmlType::kQ4_0:
      for (std::uint64_t b = 0; b < n / kQk; ++b, src += info.block_bytes, dst += kQk) {
        const float d = fp16_to_float(load_u16(src));
        const std::uint8_t* qs = src + 2;
        for (std::uint32_t j = 0; j < kQk / 2; ++j) {
          dst[j] = d * float(int(qs[j] & 0x0f) - 8);
          dst[j + kQk / 2] = d * float(int(qs[j] >> 4) - 8);
        }
      }
      return;
    case GgmlType::kQ4_1:
      for (std::uint64_t b = 0; b < n / kQk; ++b, src += info.block_bytes, dst += kQk) {
        const float d = fp16_to_float(load_u16(src)), m = fp16_to_float(load_u16(src + 2));
        const std::uint8_t* qs = src + 4;
        for (std::uint32_t j = 0; j < kQk / 2; ++j) {
          dst[j] = d * float(qs[j] & 0x0f) + m;
          dst[j + kQk / 2] = d * float(qs[j] >> 4) + m;
        }
      }
      return;
  }
}

}  // namespace inferscale
