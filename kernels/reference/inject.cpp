#include "kernels/reference/inject.h"

#include "kernels/reference/numeric.h"
#include "kernels/reference/rope.h"

namespace inferscale {

void kv_inject_reference(const InjectParams& p) {
  const std::int64_t row = std::int64_t(p.kv_heads) * p.head_dim;  // one token of one layer
  for (std::int64_t t = 0; t < p.tokens; ++t) {
    const std::int64_t src = p.src_slots[t], dst = p.dst_slots[t];
    const std::int64_t src_base =
        (src / p.pool.block_tokens) * p.pool.block_stride + (src % p.pool.block_tokens) * row;
    for (std::int64_t l = 0; l < p.layers; ++l) {
      const std::int64_t s0 = src_base + l * p.pool.layer_stride;
      const std::int64_t d0 = l * p.cache_layer_stride + dst * row;
      for (std::int64_t h = 0; h < p.kv_heads; ++h) {
        rope_row_reference<true>(p.pool.k, s0 + h * p.head_dim, p.cache_k, d0 + h * p.head_dim,
                                 p.head_dim, p.style, p.table, p.positions[t], p.dtype);
      }
      for (std::int64_t i = 0; i < row; ++i)
        copy_elem(p.pool.v, s0 + i, p.cache_v, d0 + i, p.dtype);
    }
  }
}

}  // namespace inferscale
