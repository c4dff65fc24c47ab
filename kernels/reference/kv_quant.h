#pragma once
// @brief Storage formats of fact KV (`store.kv_dtype`, the fidelity config's `kv_dtype`) and
// their round trip: the value a key or value becomes once stored in the format and dequantized
// on injection. The model computes in its own dtype; only stored fact KV is rounded.

#include <cstdint>
#include <string>

namespace inferscale {

/// kNative: stored as computed. kBf16: rounded to bf16. kFp8: fp8 e4m3 (OCP "e4m3fn": no
/// infinities, largest value 448) with one fp32 scale per head vector. kInt8: symmetric int8
/// (-127 .. 127) with one fp32 scale per head vector.
enum class KvFormat { kNative, kBf16, kFp8, kInt8 };

/// "bf16" | "fp8" | "int8" (and "native"); throws std::invalid_argument on anything else.
KvFormat parse_kv_format(const std::string& name);
const char* kv_format_name(KvFormat f);

/// Bytes one head vector of `head_dim` values occupies: `native_bytes` per value for kNative,
/// 2 for kBf16, 1 for kFp8 and kInt8 plus their 4-byte scale.
std::uint64_t kv_format_vector_bytes(KvFormat f, std::uint32_t head_dim,
                                     std::uint32_t native_bytes);

/// x rounded to the nearest fp8 e4m3 value, ties to even, saturating at +-448; subnormals
/// (steps of 2^-9 below 2^-6) kept.
float fp8_e4m3_round(float x);

/// In place, for `vectors` vectors of `dim` contiguous floats: stores and loads each vector in
/// format `f`. kFp8 / kInt8: scale = (largest |x| of the vector) / 448 or / 127 in fp32 (1 for
/// an all-zero vector), x -> round(x / scale) * scale with the format's rounding.
void kv_quant_round_trip_reference(float* x, std::int64_t vectors, std::int64_t dim, KvFormat f);

}  // namespace inferscale
