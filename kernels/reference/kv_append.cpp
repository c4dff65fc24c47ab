#include "kernels/reference/kv_append.h"

#include <cstdint>
#include <vector>

#include "kernels/reference/numeric.h"
#include "kernels/reference/rms_norm.h"
#include "kernels/reference/rope.h"

namespace inferscale {

void kv_append_reference(const KvAppendParams& p) {
  const std::int64_t d = p.head_dim;
  const std::int64_t row = std::int64_t(p.kv_heads) * d;
  const std::int64_t k_off = std::int64_t(p.heads) * d, v_off = k_off + row;
  const std::int64_t qkv_elems = v_off + row;
  std::vector<std::uint8_t> scaled;  // one token's q | k | v after the folded norm's scale
  if (p.norm.x != nullptr) scaled.resize(std::size_t(qkv_elems) * dtype_bytes(p.dtype));
  for (std::int64_t t = 0; t < p.tokens; ++t) {
    const void* qkv = p.qkv;
    std::int64_t in0 = t * p.qkv_stride;
    if (p.norm.x != nullptr) {
      // Scaled and rounded to the dtype first: the rest sees the row an unfolded model's
      // projection would have produced, and rotates it exactly as without the scale.
      const float s = rms_scale_reference(p.norm, t, p.dtype);
      for (std::int64_t i = 0; i < qkv_elems; ++i)
        store_elem(scaled.data(), i, p.dtype, load_elem(p.qkv, in0 + i, p.dtype) * s);
      qkv = scaled.data();
      in0 = 0;
    }
    const std::int32_t pos = p.positions[t];
    for (std::int64_t h = 0; h < p.heads; ++h) {
      rope_row_reference<true>(qkv, in0 + h * d, p.q_out, (t * p.heads + h) * d, p.head_dim,
                               p.style, p.table, pos, p.dtype);
    }
    const std::int64_t c0 = std::int64_t(p.cache_slots[t]) * row;
    for (std::int64_t h = 0; h < p.kv_heads; ++h) {
      rope_row_reference<true>(qkv, in0 + k_off + h * d, p.cache_k, c0 + h * d, p.head_dim, p.style,
                               p.table, pos, p.dtype);
    }
    for (std::int64_t i = 0; i < row; ++i)
      copy_elem(qkv, in0 + v_off + i, p.cache_v, c0 + i, p.dtype);

    const std::int32_t ps = p.pool_slots ? p.pool_slots[t] : -1;
    if (ps < 0 || p.pool.k == nullptr) continue;
    const std::int64_t b0 =
        (ps / p.pool.block_tokens) * p.pool.block_stride + (ps % p.pool.block_tokens) * row;
    for (std::int64_t i = 0; i < row; ++i) {
      // Rotated K is already in the cache row: copying it keeps one rotation code path.
      if (p.pool_rotated) {
        copy_elem(p.cache_k, c0 + i, p.pool.k, b0 + i, p.dtype);
      } else {
        copy_elem(qkv, in0 + k_off + i, p.pool.k, b0 + i, p.dtype);
      }
      copy_elem(qkv, in0 + v_off + i, p.pool.v, b0 + i, p.dtype);
    }
  }
}

}  // namespace inferscale
