#pragma once
// @brief Host-side planning of the split-KV attention kernel (kernels/split_kv_attention.cu):
// how many warps take query rows, how the keys are split so that enough blocks are in flight,
// the fp32 workspace the partial results need, and what the kernel accepts. Plain C++: the
// executor sizes its workspace with it and the CPU tests check it.

#include <algorithm>
#include <cstdint>
#include <string>

#include "kernels/params.h"

namespace inferscale {

/// Keys per shared-memory tile of the split-KV kernel; chunks are multiples of it.
constexpr std::int32_t kSplitKvTileKeys = 64;
/// Warps per block of the split-KV kernel.
constexpr std::int32_t kSplitKvWarps = 4;

/// The shape a plan is made for.
struct SplitKvShape {
  std::int32_t segments = 0, max_q = 0, max_k = 0, heads = 0, kv_heads = 0;
};

/// Plans the split-KV kernel for a shape on a device with `sm_count` multiprocessors:
/// warps_m = 1, 2 or 4 as the packed rows of the longest segment (max_q * heads / kv_heads) fit
/// in 16, 32 or more; then as many key splits as bring the grid to about two blocks per
/// multiprocessor (two fit in shared memory), never more than the 64-key tiles of the longest
/// context, and none shorter than `min_chunk_tiles` tiles (fewer, longer splits: less fp32
/// partial output for the combine to read). `force_warps_m` / `force_splits` (> 0) override the
/// choices (tests).
inline SplitKvPlan split_kv_plan(const SplitKvShape& s, std::int32_t sm_count,
                                 std::int32_t force_warps_m = 0, std::int32_t force_splits = 0,
                                 std::int32_t min_chunk_tiles = 1) {
  SplitKvPlan plan;
  const std::int64_t group = s.kv_heads > 0 ? s.heads / s.kv_heads : 1;
  const std::int64_t rows = std::max<std::int64_t>(1, std::int64_t(s.max_q) * group);
  plan.warps_m = force_warps_m > 0 ? force_warps_m : (rows <= 16 ? 1 : (rows <= 32 ? 2 : 4));
  const std::int64_t tile_rows = 16 * std::int64_t(plan.warps_m);
  plan.row_tiles = std::int32_t((rows + tile_rows - 1) / tile_rows);
  const std::int64_t key_tiles =
      std::max<std::int64_t>(1, (std::int64_t(s.max_k) + kSplitKvTileKeys - 1) / kSplitKvTileKeys);
  std::int64_t splits = 1;
  if (force_splits > 0) {
    splits = force_splits;
  } else {
    const std::int64_t base = std::max<std::int64_t>(
        1, std::int64_t(s.segments) * std::max(1, s.kv_heads) * plan.row_tiles);
    const std::int64_t target = 2 * std::int64_t(std::max(1, sm_count));
    splits = (target + base - 1) / base;
  }
  splits = std::clamp<std::int64_t>(splits, 1, key_tiles);
  std::int64_t chunk_tiles = (key_tiles + splits - 1) / splits;
  if (force_splits <= 0) {
    chunk_tiles =
        std::min<std::int64_t>(std::max<std::int64_t>(chunk_tiles, min_chunk_tiles), key_tiles);
  }
  plan.chunk = std::int32_t(chunk_tiles * kSplitKvTileKeys);
  plan.splits = std::int32_t((key_tiles + chunk_tiles - 1) / chunk_tiles);
  return plan;
}

/// fp32 elements of the workspace: per partial, tokens * heads rows of head_dim values, then
/// their running maxima and sums ([partials][tokens * heads][head_dim], [partials][tokens *
/// heads], [partials][tokens * heads]). 0 when the plan writes the output directly.
inline std::int64_t split_kv_workspace_floats(const SplitKvPlan& plan, std::int32_t tokens,
                                              std::int32_t heads, std::int32_t head_dim) {
  if (plan.direct()) return 0;
  return std::int64_t(plan.partials()) * tokens * heads * (std::int64_t(head_dim) + 2);
}

/// Why the split-KV kernel cannot run these parameters, or "" when it can: 16-bit types, head_dim
/// 64 or 128, heads a multiple of kv_heads, 16-byte aligned rows, and a plan that covers the
/// shape within the grid's limits.
inline std::string split_kv_attention_check(const SplitKvAttentionParams& p) {
  auto aligned = [](const void* ptr) { return (reinterpret_cast<std::uintptr_t>(ptr) & 15u) == 0; };
  if (p.dtype != DType::kBF16 && p.dtype != DType::kF16) return "dtype must be bf16 or f16";
  if (p.head_dim != 64 && p.head_dim != 128) return "head_dim must be 64 or 128";
  if (p.heads <= 0 || p.kv_heads <= 0 || p.heads % p.kv_heads != 0) {
    return "heads must be a positive multiple of kv_heads";
  }
  if (p.segments < 0 || p.tokens < 0 || p.max_q < 0 || p.max_k < p.max_q) {
    return "segments, tokens and max_q must be >= 0 and max_k >= max_q";
  }
  if (!aligned(p.q) || !aligned(p.k) || !aligned(p.v) || !aligned(p.out)) {
    return "q, k, v and out must be 16-byte aligned";
  }
  const std::int64_t strides[] = {p.q_token_stride, p.q_head_stride,    p.kv_row_stride,
                                  p.kv_head_stride, p.out_token_stride, p.out_head_stride};
  for (std::int64_t s : strides) {
    if (s % 8 != 0) return "strides must be multiples of 8 elements (16 bytes)";
  }
  const SplitKvPlan& plan = p.plan;
  if (plan.warps_m != 1 && plan.warps_m != 2 && plan.warps_m != 4) {
    return "plan.warps_m must be 1, 2 or 4";
  }
  if (plan.chunk <= 0 || plan.chunk % kSplitKvTileKeys != 0) {
    return "plan.chunk must be a positive multiple of 64";
  }
  const std::int64_t rows = std::int64_t(p.max_q) * (p.heads / p.kv_heads);
  if (plan.row_tiles < 1 || std::int64_t(plan.row_tiles) * 16 * plan.warps_m < rows) {
    return "plan.row_tiles must cover max_q * heads / kv_heads rows";
  }
  if (plan.splits < 1 || std::int64_t(plan.splits) * plan.chunk < p.max_k) {
    return "plan.splits * plan.chunk must cover max_k";
  }
  if (plan.splits > 65535 || std::int64_t(p.segments) * p.kv_heads > 65535) {
    return "grid too large (splits and segments * kv_heads must be <= 65535)";
  }
  if (!plan.direct() && p.workspace == nullptr) return "the plan needs a workspace";
  return "";
}

}  // namespace inferscale
