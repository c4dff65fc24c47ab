#pragma once
// @brief Plain types shared by the CUDA kernels, their CPU references and their callers.
// No CUDA and no torch here: the CPU references build on machines without either.

#include <cstdint>

namespace inferscale {

/// Element type of a kernel's tensors. Arithmetic is always fp32; inputs are widened on load and
/// outputs rounded to nearest even on store.
enum class DType : std::int32_t { kF32 = 0, kBF16 = 1, kF16 = 2 };

constexpr int dtype_bytes(DType t) {
  return t == DType::kF32 ? 4 : 2;
}
constexpr const char* dtype_name(DType t) {
  return t == DType::kF32 ? "f32" : (t == DType::kBF16 ? "bf16" : "f16");
}

/// Rotary pair layout: NeoX rotate-half pairs (i, i + d/2); GPT-J interleaved pairs (2i, 2i + 1).
enum class RopeStyle : std::int32_t { kNeox = 0, kGptj = 1 };

constexpr const char* rope_style_name(RopeStyle s) {
  return s == RopeStyle::kNeox ? "neox" : "gptj";
}

/// A rotary table built by rope_table_build(): row p holds cos/sin(p * inv_freq[i]).
struct RopeTableView {
  const float* cos = nullptr;  // [positions, head_dim / 2], fp32
  const float* sin = nullptr;  // [positions, head_dim / 2], fp32
  std::int32_t positions = 0;  // rows; a rotation by p needs |p| < positions
};

}  // namespace inferscale
