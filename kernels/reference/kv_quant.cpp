// Fact KV storage formats: the plain loops that define their rounding (executor/gpu/kv_quant.cpp
// is the tensor version, tested against these).
#include "kernels/reference/kv_quant.h"

#include "kernels/reference/numeric.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace inferscale {

namespace {
constexpr float kFp8Max = 448.0f;
constexpr float kInt8Max = 127.0f;
}  // namespace

KvFormat parse_kv_format(const std::string& name) {
  if (name == "native") return KvFormat::kNative;
  if (name == "bf16") return KvFormat::kBf16;
  if (name == "fp8") return KvFormat::kFp8;
  if (name == "int8") return KvFormat::kInt8;
  throw std::invalid_argument("unknown KV format '" + name + "' (expected bf16, fp8 or int8)");
}

const char* kv_format_name(KvFormat f) {
  switch (f) {
    case KvFormat::kNative:
      return "native";
    case KvFormat::kBf16:
      return "bf16";
    case KvFormat::kFp8:
      return "fp8";
    case KvFormat::kInt8:
      return "int8";
  }
  return "?";
}

std::uint64_t kv_format_vector_bytes(KvFormat f, std::uint32_t head_dim,
                                     std::uint32_t native_bytes) {
  switch (f) {
    case KvFormat::kNative:
      return std::uint64_t(head_dim) * native_bytes;
    case KvFormat::kBf16:
      return 2ull * head_dim;
    case KvFormat::kFp8:
    case KvFormat::kInt8:
      return std::uint64_t(head_dim) + 4;
  }
  return 0;
}

float fp8_e4m3_round(float x) {
  if (std::isnan(x) || x == 0.0f) return x;
  const float a = std::fabs(x);
  int exp2 = 0;
  std::frexp(a, &exp2);                        // a = m * 2^exp2, m in [0.5, 1)
  const int e = std::max(exp2 - 1, -6);        // below 2^-6: subnormal steps of 2^-9
  const float step = std::ldexp(1.0f, e - 3);  // three mantissa bits
  const float q = std::min(std::nearbyint(a / step) * step, kFp8Max);
  return std::copysign(q, x);
}

void kv_quant_round_trip_reference(float* x, std::int64_t vectors, std::int64_t dim, KvFormat f) {
  if (f == KvFormat::kNative) return;
  for (std::int64_t v = 0; v < vectors; ++v) {
    float* row = x + v * dim;
    if (f == KvFormat::kBf16) {
      for (std::int64_t i = 0; i < dim; ++i) row[i] = bf16_to_float(float_to_bf16(row[i]));
      continue;
    }
    float amax = 0;
    for (std::int64_t i = 0; i < dim; ++i) amax = std::max(amax, std::fabs(row[i]));
    const float top = f == KvFormat::kFp8 ? kFp8Max : kInt8Max;
    const float scale = amax > 0 ? amax / top : 1.0f;
    for (std::int64_t i = 0; i < dim; ++i) {
      const float y = row[i] / scale;
      const float q = f == KvFormat::kFp8 ? fp8_e4m3_round(y)
                                          : std::clamp(std::nearbyint(y), -kInt8Max, kInt8Max);
      row[i] = q * scale;
    }
  }
}

}  // namespace inferscale
