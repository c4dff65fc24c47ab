#pragma once
// @brief Parameter structs of every kernel, shared by the CUDA launchers (kernels/*.cuh) and the
// CPU references (kernels/reference/*.h) that define what each kernel means. Plain C++.
//
// Strides and offsets are in elements. Index arrays are int32. A "pool slot" is
// block * block_tokens + offset inside the block; a "cache slot" is a row of a layer's KV cache.

#include <cstdint>

#include "kernels/kernel_types.h"

namespace inferscale {

/// Rotate (forward) or un-rotate rows of head vectors at per-token positions.
/// A negative position p rotates by the angle of -|p| (a backwards delta shift).
struct RopeParams {
  const void* in = nullptr;  // [tokens, heads, head_dim] at token_stride / head_stride
  void* out = nullptr;       // same layout and strides as `in`; may equal `in`
  const std::int32_t* positions = nullptr;  // [tokens]
  RopeTableView table;
  std::int64_t token_stride = 0;
  std::int64_t head_stride = 0;
  std::int32_t tokens = 0, heads = 0, head_dim = 0;
  DType dtype = DType::kF32;
  RopeStyle style = RopeStyle::kNeox;
};

/// Layout of the fact pool: blocks of `block_tokens` tokens holding every layer's K and V.
/// Element (slot, layer, head, i) of K lives at
///   k[(slot / block_tokens) * block_stride + layer * layer_stride
///     + (slot % block_tokens) * kv_heads * head_dim + head * head_dim + i]
/// and likewise for V from base `v`. The executor's pool is
/// [num_blocks, layers, 2 (K, V), block_tokens, kv_heads, head_dim].
struct PoolView {
  void* k = nullptr;
  void* v = nullptr;
  std::int64_t block_stride = 0;
  std::int64_t layer_stride = 0;
  std::int32_t block_tokens = 16;
};

/// Fused injection: for every injected token, gather its K and V rows of all layers from the
/// pool, rotate K to its position (composed position; signed shift in delta mode) and write both
/// into the request's rows of the KV cache. V is copied unchanged.
struct InjectParams {
  PoolView pool;                            // source (read only)
  void* cache_k = nullptr;                  // [layers, cache_slots, kv_heads, head_dim]
  void* cache_v = nullptr;                  // [layers, cache_slots, kv_heads, head_dim]
  std::int64_t cache_layer_stride = 0;      // cache_slots * kv_heads * head_dim
  const std::int32_t* src_slots = nullptr;  // [tokens] pool slots
  const std::int32_t* dst_slots = nullptr;  // [tokens] cache slots
  const std::int32_t* positions = nullptr;  // [tokens] rotation applied to K
  RopeTableView table;
  std::int32_t tokens = 0, layers = 0, kv_heads = 0, head_dim = 0;
  DType dtype = DType::kF32;
  RopeStyle style = RopeStyle::kNeox;
};

/// The per-row scale of an RMSNorm folded into the projection before a kernel. RMSNorm(x) W^T =
/// diag(1 / rms(x)) x (W diag(g))^T: the norm weight g is folded into W's columns once, the
/// projection reads the residual rows x themselves, and the kernel that reads its output
/// multiplies row r by 1 / sqrt(mean(x[r]^2) + eps), summed in fp32. x == nullptr: no scaling.
struct RmsScaleView {
  const void* x = nullptr;  // [rows, cols] at stride, the kernel's dtype; rows = the kernel's rows
  std::int64_t stride = 0;  // elements between consecutive rows
  std::int64_t cols = 0;
  float eps = 1e-5f;
};

/// Native prefill/decode of one layer after the fused QKV projection: rotate q into q_out,
/// rotate k into the KV cache, copy v into the KV cache, and (for fact encodes) store the
/// token's K (before RoPE, or after it in delta mode) and V into the pool. With `norm`, the
/// token's q, k and v are first multiplied by its 1 / rms and rounded to the dtype (the attention
/// RMSNorm folded into the QKV weights): the rounded row is then what a kernel without `norm`
/// would have read, so pool K rotated at injection stays bit-identical to cache K.
struct KvAppendParams {
  const void* qkv = nullptr;    // [tokens, (heads + 2 * kv_heads) * head_dim]: q | k | v
  std::int64_t qkv_stride = 0;  // elements between consecutive tokens
  void* q_out = nullptr;        // [tokens, heads, head_dim], contiguous
  void* cache_k = nullptr;      // this layer: [cache_slots, kv_heads, head_dim]
  void* cache_v = nullptr;      // this layer: [cache_slots, kv_heads, head_dim]
  const std::int32_t* cache_slots = nullptr;  // [tokens]
  PoolView pool;                              // k / v point at this layer's block 0; null: no store
  const std::int32_t* pool_slots = nullptr;   // [tokens]; -1: not stored; null: none stored
  bool pool_rotated = false;                  // store K after RoPE (delta mode) instead of before
  const std::int32_t* positions = nullptr;    // [tokens]
  RopeTableView table;
  RmsScaleView norm;  // rows: tokens; x null: qkv used as is
  std::int32_t tokens = 0, heads = 0, kv_heads = 0, head_dim = 0;
  DType dtype = DType::kF32;
  RopeStyle style = RopeStyle::kNeox;
};

/// y = x * rsqrt(mean(x^2) + eps) * weight, per row, in fp32: (x * r) * w, rounded once.
struct RmsNormParams {
  const void* x = nullptr;       // [rows, cols] at x_stride
  void* out = nullptr;           // [rows, cols] at out_stride
  const void* weight = nullptr;  // [cols]
  std::int64_t rows = 0, cols = 0;
  std::int64_t x_stride = 0, out_stride = 0;
  float eps = 1e-5f;
  DType dtype = DType::kF32;
};

/// SwiGLU activation: out[r, c] = silu(s * gate_up[r, c]) * (s * gate_up[r, cols + c]),
/// silu(g) = g / (1 + exp(-g)), in fp32, rounded once; s = 1 / rms(norm.x[r]) with `norm` (the
/// MLP RMSNorm folded into the gate/up weights), else 1.
struct SiluMulParams {
  const void* gate_up = nullptr;  // [rows, 2 * cols] at in_stride: gate | up
  void* out = nullptr;            // [rows, cols] at out_stride
  std::int64_t rows = 0, cols = 0;
  std::int64_t in_stride = 0, out_stride = 0;
  RmsScaleView norm;  // rows: rows; x null: no scaling
  DType dtype = DType::kF32;
};

/// Greedy sampling: out[r] = the first column c of row r holding the row's largest value, a NaN
/// counting as larger than any number (the first NaN wins), as at::argmax. cols >= 1.
struct ArgmaxParams {
  const void* in = nullptr;     // [rows, cols] at stride
  std::int32_t* out = nullptr;  // [rows]
  std::int64_t rows = 0, cols = 0, stride = 0;
  DType dtype = DType::kF32;
};

/// How the split-KV attention kernel divides its work (see kernels/split_kv_plan.h). A block has
/// four warps: `warps_m` of them take 16 packed query rows each, and the 4 / warps_m warps that
/// share rows take one slice each of every 64-key tile, so a block covers 16 * warps_m rows.
/// Each (segment, kv head, row tile) has `splits` blocks, split s taking keys
/// [s * chunk, (s + 1) * chunk); every warp slice's softmax partial is one of `partials()`.
struct SplitKvPlan {
  std::int32_t warps_m = 4;    // 1, 2 or 4
  std::int32_t row_tiles = 1;  // tiles of 16 * warps_m packed rows (max_q * heads / kv_heads)
  std::int32_t splits = 1;     // key ranges per (segment, kv head, row tile)
  std::int32_t chunk = 64;     // keys per split, a multiple of 64
  constexpr std::int32_t partials() const { return splits * (4 / warps_m); }
  /// One partial: the kernel normalizes and writes `out` itself (no workspace, no combine).
  constexpr bool direct() const { return partials() == 1; }
};

/// Causal grouped-query attention of query segments over their rows of one layer's KV cache.
/// Segment s has n = cu_q[s + 1] - cu_q[s] query tokens (rows cu_q[s] .. of q) and the keys and
/// values of cache rows k_start[s] .. k_start[s] + k_used[s] - 1 (k_used[s] >= n); its query i
/// attends keys 0 .. k_used[s] - n + i (causal, aligned to the end). Head h reads KV head
/// h / (heads / kv_heads). out = softmax(scale * q k^T) v, accumulated in fp32, rounded once.
/// The kernel packs the heads / kv_heads query heads of a KV head into one row tile (GQA), so
/// each KV tile is read once per group, and splits the keys (flash-decoding) by `plan`.
struct SplitKvAttentionParams {
  const void* q = nullptr;                // [tokens, heads, head_dim] at q_token/head_stride
  const void* k = nullptr;                // [cache_rows, kv_heads, head_dim] at kv_row/head_stride
  const void* v = nullptr;                // same layout and strides as k
  void* out = nullptr;                    // [tokens, heads, head_dim] at out_token/head_stride
  const std::int32_t* cu_q = nullptr;     // [segments + 1], cu_q[segments] = tokens
  const std::int32_t* k_start = nullptr;  // [segments] first cache row of each segment's keys
  const std::int32_t* k_used = nullptr;   // [segments] keys of each segment
  float* workspace = nullptr;  // split_kv_workspace_floats(...) fp32; unused when plan.direct()
  std::int64_t q_token_stride = 0, q_head_stride = 0;
  std::int64_t kv_row_stride = 0, kv_head_stride = 0;
  std::int64_t out_token_stride = 0, out_head_stride = 0;
  std::int32_t segments = 0, tokens = 0, heads = 0, kv_heads = 0, head_dim = 0;
  std::int32_t max_q = 0, max_k = 0;  // the largest n and k_used over segments
  float scale = 1.0f;
  DType dtype = DType::kBF16;
  SplitKvPlan plan;  // the kernel's division of work; the reference ignores it
};

}  // namespace inferscale
