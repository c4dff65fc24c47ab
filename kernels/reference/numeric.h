#pragma once
// @brief Host conversions between fp32 and the 16-bit formats (round to nearest even, as the
// CUDA intrinsics __float2bfloat16_rn / __float2half_rn do), and typed element access, so the
// CPU references compute exactly what the kernels compute.

#include <cstdint>
#include <cstring>

#include "kernels/kernel_types.h"

namespace inferscale {

inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline float bf16_to_float(std::uint16_t h) {
  return bits_float(std::uint32_t(h) << 16);
}

inline std::uint16_t float_to_bf16(float f) {
  std::uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return std::uint16_t(((u >> 16) & 0x8000u) | 0x7fc0u);
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
  return std::uint16_t(u >> 16);
}

inline float f16_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in fp32
    const float mag = float(mant) * bits_float(0x33800000u);
    return bits_float(sign | float_bits(mag));
  }
  if (exp == 31) return bits_float(sign | 0x7f800000u | (mant << 13));
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline std::uint16_t float_to_f16(float f) {
  const std::uint32_t u = float_bits(f);
  const std::uint16_t sign = std::uint16_t((u >> 16) & 0x8000u);
  const std::uint32_t mag = u & 0x7fffffffu;
  const std::uint32_t exp = mag >> 23;
  if (mag > 0x7f800000u) return sign | 0x7e00u;  // NaN
  if (exp >= 143) return sign | 0x7c00u;         // |f| >= 2^16: infinity
  if (exp >= 113) {                              // a normal half (|f| >= 2^-14)
    std::uint32_t r = mag - (112u << 23);        // re-bias the exponent (127 - 15)
    r += 0xfffu + ((r >> 13) & 1u);              // drop 13 mantissa bits, ties to even
    return std::uint16_t(sign | (r >> 13));      // a carry into exponent 31 is infinity
  }
  if (exp < 101) return sign;  // below half the smallest subnormal: zero
  // Subnormal half: the value in units of 2^-24 is mant24 >> (126 - exp), rounded to even.
  const std::uint32_t mant = (mag & 0x7fffffu) | 0x800000u;
  const std::uint32_t shift = 126u - exp;  // 14 .. 25
  std::uint32_t q = mant >> shift;
  const std::uint32_t rem = mant & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (q & 1u))) ++q;
  return std::uint16_t(sign | q);
}

/// Element i of a typed buffer, widened to fp32.
inline float load_elem(const void* p, std::int64_t i, DType t) {
  switch (t) {
    case DType::kF32:
      return static_cast<const float*>(p)[i];
    case DType::kBF16:
      return bf16_to_float(static_cast<const std::uint16_t*>(p)[i]);
    case DType::kF16:
      return f16_to_float(static_cast<const std::uint16_t*>(p)[i]);
  }
  return 0.0f;
}

/// Stores fp32 `v` as element i of a typed buffer, rounding to nearest even.
inline void store_elem(void* p, std::int64_t i, DType t, float v) {
  switch (t) {
    case DType::kF32:
      static_cast<float*>(p)[i] = v;
      return;
    case DType::kBF16:
      static_cast<std::uint16_t*>(p)[i] = float_to_bf16(v);
      return;
    case DType::kF16:
      static_cast<std::uint16_t*>(p)[i] = float_to_f16(v);
      return;
  }
}

/// Copies element i of `src` to element j of `dst` (same type) bit for bit.
inline void copy_elem(const void* src, std::int64_t i, void* dst, std::int64_t j, DType t) {
  const int n = dtype_bytes(t);
  std::memcpy(static_cast<char*>(dst) + j * n, static_cast<const char*>(src) + i * n, n);
}

}  // namespace inferscale
