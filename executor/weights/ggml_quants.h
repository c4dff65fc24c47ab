#pragma once
// @brief ggml tensor element types and their dequantization to fp32: F32, F16, BF16 and the
// block formats Q8_0, Q4_0 and Q4_1 (32 weights per block, one or two fp16 factors each).
// Other types are named (for error messages) but not decoded.

#include <cstdint>
#include <string>

namespace inferscale {

/// ggml_type values as stored in GGUF tensor infos.
enum class GgmlType : std::uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ8_0 = 8,
  kBF16 = 30,
};

/// Layout of one ggml type: a block of `block_elements` values takes `block_bytes` bytes.
struct GgmlTypeInfo {
  std::string name;
  std::uint32_t block_elements = 0;
  std::uint32_t block_bytes = 0;
  bool decodable = false;  // dequantize() supports it
};

/// The layout of a ggml type id; false for ids this reader does not know at all.
bool ggml_type_info(std::uint32_t type, GgmlTypeInfo& out);

/// IEEE half and bfloat16 bit patterns to float.
float fp16_to_float(std::uint16_t bits);
float bf16_to_float(std::uint16_t bits);
/// Round-to-nearest-even float to IEEE half (tests build blocks with it).
std::uint16_t float_to_fp16(float value);

/// Decodes `n` values of `type` from `src` (n a multiple of the block size) into `dst`.
/// Block layouts (little-endian):
///   Q8_0: fp16 d, int8 q[32]                      x[i] = d * q[i]
///   Q4_0: fp16 d, uint8 qs[16]                    x[j] = d * (lo(qs[j]) - 8),
///                                                 x[j + 16] = d * (hi(qs[j]) - 8)
///   Q4_1: fp16 d, fp16 m, uint8 qs[16]            x[j] = d * lo(qs[j]) + m,
///                                                 x[j + 16] = d * hi(qs[j]) + m
/// Throws std::invalid_argument for a type it cannot decode.
void ggml_dequantize(std::uint32_t type, const std::uint8_t* src, float* dst, std::uint64_t n);

}  // namespace inferscale
