#pragma once
// A paged attention context and its copy-path twin, on the host: facts in a fact pool (blocks
// out of order, stored before RoPE, or after it at their encode positions in delta mode), and
// request segments composed of facts and of the request's own rows. The copy twin injects the
// facts into a KV cache with kv_inject_reference and attends the cache unpaged; the paged one
// attends through the block table. The reference and the kernel tests both use it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/paged_kv.h"
#include "kernels/params.h"
#include "kernels/reference/inject.h"
#include "kernels/reference/numeric.h"
#include "kernels/reference/rope.h"

namespace inferscale::test {

struct PagedKvCase {
  std::int32_t heads = 4, kv_heads = 2, head_dim = 8;
  DType dtype = DType::kF32;
  RopeStyle style = RopeStyle::kNeox;
  bool delta = false;         // pool K after RoPE at encode positions, shifted on load
  double rope_scaling = 8.0;  // llama3 scaling factor (Llama 3.1); 0: none
  std::vector<std::int32_t> fact_tokens = {23, 7, 16, 40, 1};
  /// A segment's pieces in position order: >= 0 a fact (index into fact_tokens), < 0 that many
  /// of the request's own tokens; its queries are the last `queries` own tokens.
  struct Segment {
    std::vector<std::int32_t> pieces;
    std::int32_t queries = 1;
  };
  std::vector<Segment> segments = {{{0, 1, -20}, 5}, {{2, 0, -3, 3, -9}, 1}, {{4, -1}, 1}};
  std::uint64_t seed = 1;
};

/// Host buffers (elements of the case's dtype) and the index arrays of both paths.
struct PagedKvBuffers {
  std::int32_t block_tokens = 16, pool_blocks = 0, cache_rows = 0, tokens = 0;
  std::int64_t block_stride = 0, row = 0;  // elements of a pool block / a cache row
  std::vector<unsigned char> q, pool_k, pool_v, cache_k, cache_v, copy_k, copy_v;
  std::vector<float> cos, sin;
  std::vector<std::int32_t> cu_q, k_start, copy_used, paged_used, page_start;
  std::vector<PagedKvEntry> pages;
  std::int32_t max_q = 0, copy_max_k = 0, paged_max_k = 0;
  std::int32_t rope_positions = 0;

  RopeTableView table() const { return {cos.data(), sin.data(), rope_positions}; }
};

inline void fill_random(std::vector<unsigned char>& buf, std::int64_t n, DType t, std::mt19937& g) {
  buf.assign(std::size_t(n) * std::size_t(dtype_bytes(t)), 0);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (std::int64_t i = 0; i < n; ++i) store_elem(buf.data(), i, t, u(g));
}

inline PagedKvBuffers make_paged_kv(const PagedKvCase& c) {
  PagedKvBuffers b;
  std::mt19937 gen(std::uint32_t(c.seed));
  const std::int32_t bt = b.block_tokens, d = c.head_dim;
  b.row = std::int64_t(c.kv_heads) * d;
  b.block_stride = bt * b.row;
  // Facts' blocks, shuffled so that a fact's blocks are neither contiguous nor in order.
  std::vector<std::vector<std::int32_t>> fact_blocks(c.fact_tokens.size());
  std::int32_t blocks = 2;  // two spare blocks never used
  for (std::int32_t t : c.fact_tokens) blocks += (t + bt - 1) / bt;
  b.pool_blocks = blocks;
  std::vector<std::int32_t> order(std::size_t(blocks - 2));
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = std::int32_t(i) + 1;
  std::shuffle(order.begin(), order.end(), gen);
  std::size_t next = 0;
  for (std::size_t f = 0; f < c.fact_tokens.size(); ++f) {
    for (std::int32_t i = 0; i < c.fact_tokens[f]; i += bt) fact_blocks[f].push_back(order[next++]);
  }
  auto slot = [&](std::size_t f, std::int32_t i) { return fact_blocks[f][i / bt] * bt + i % bt; };
  auto encode_position = [&](std::size_t f) { return c.delta ? std::int32_t(5 + 3 * f) : 0; };
  fill_random(b.pool_k, std::int64_t(blocks) * b.block_stride, c.dtype, gen);
  fill_random(b.pool_v, std::int64_t(blocks) * b.block_stride, c.dtype, gen);

  // Segments: regions of the cache 3 rows apart; rows outside own pieces hold NaN (a read of a
  // row that the paged path should not read poisons its output).
  std::vector<std::int32_t> region(c.segments.size()), length(c.segments.size());
  std::int32_t rows = 1;
  for (std::size_t s = 0; s < c.segments.size(); ++s) {
    std::int32_t n = 0;
    for (std::int32_t p : c.segments[s].pieces) n += p >= 0 ? c.fact_tokens[std::size_t(p)] : -p;
    region[s] = rows;
    length[s] = n;
    rows += n + 3;
  }
  b.cache_rows = rows;
  const std::int64_t cache_elems = std::int64_t(rows) * b.row;
  b.cache_k.assign(std::size_t(cache_elems) * dtype_bytes(c.dtype), 0);
  b.cache_v = b.cache_k;
  for (std::int64_t i = 0; i < cache_elems; ++i) {
    store_elem(b.cache_k.data(), i, c.dtype, NAN);
    store_elem(b.cache_v.data(), i, c.dtype, NAN);
  }
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::int32_t max_pos = 0;
  std::vector<std::int32_t> src, dst, pos;
  b.cu_q.push_back(0);
  b.page_start.push_back(0);
  for (std::size_t s = 0; s < c.segments.size(); ++s) {
    std::int32_t p0 = 0;
    for (std::int32_t piece : c.segments[s].pieces) {
      if (piece < 0) {  // own rows: written (rotated already) into both caches
        for (std::int64_t i = std::int64_t(region[s] + p0) * b.row;
             i < std::int64_t(region[s] + p0 - piece) * b.row; ++i) {
          store_elem(b.cache_k.data(), i, c.dtype, u(gen));
          store_elem(b.cache_v.data(), i, c.dtype, u(gen));
        }
        paged_kv_add_run(b.pages, PagedKvKind::kCache, region[s] + p0, -piece, 0, bt);
        p0 -= piece;
        continue;
      }
      const std::size_t f = std::size_t(piece);
      const std::int32_t n = c.fact_tokens[f];
      for (std::int32_t i = 0; i < n; ++i) {
        src.push_back(slot(f, i));
        dst.push_back(region[s] + p0 + i);
        // As GpuExecutor::add_injection: pre-RoPE rotates to the composed position, delta shifts
        // from the encode position.
        pos.push_back(c.delta ? p0 - encode_position(f) : p0 + i);
      }
      for (std::int32_t i = 0; i < n; i += bt) {
        const std::int32_t m = std::min(bt, n - i);
        paged_kv_add_run(b.pages, c.delta ? PagedKvKind::kPoolDelta : PagedKvKind::kPoolPreRope,
                         slot(f, i), m, c.delta ? p0 - encode_position(f) : p0 + i, bt);
      }
      p0 += n;
    }
    max_pos = std::max(max_pos, p0);
    const std::int32_t nq = c.segments[s].queries;
    b.cu_q.push_back(b.cu_q.back() + nq);
    b.k_start.push_back(region[s]);
    b.copy_used.push_back(length[s]);
    const std::int32_t first_page = b.page_start.back();
    b.page_start.push_back(std::int32_t(b.pages.size()));
    b.paged_used.push_back(
        paged_kv_keys(b.pages.data() + first_page, b.pages.data() + b.pages.size()));
    b.max_q = std::max(b.max_q, nq);
    b.copy_max_k = std::max(b.copy_max_k, length[s]);
    b.paged_max_k = std::max(b.paged_max_k, b.paged_used.back());
  }
  b.k_start.push_back(rows);
  b.tokens = b.cu_q.back();
  fill_random(b.q, std::int64_t(b.tokens) * c.heads * d, c.dtype, gen);

  RopeTableSpec spec;
  spec.head_dim = d;
  spec.positions = max_pos + 64;
  spec.theta = 500000.0;
  spec.scaling_factor = c.rope_scaling;
  spec.original_max_positions = 64;  // short, so that the scaled band covers these positions
  b.rope_positions = spec.positions;
  b.cos.resize(std::size_t(spec.positions) * std::size_t(d / 2));
  b.sin.resize(b.cos.size());
  rope_table_build(spec, b.cos.data(), b.sin.data());

  // The copy path's cache: own rows as above, facts injected by the fused injection reference.
  b.copy_k = b.cache_k;
  b.copy_v = b.cache_v;
  InjectParams ip;
  ip.pool.k = b.pool_k.data();
  ip.pool.v = b.pool_v.data();
  ip.pool.block_stride = b.block_stride;
  ip.pool.layer_stride = 0;
  ip.pool.block_tokens = bt;
  ip.cache_k = b.copy_k.data();
  ip.cache_v = b.copy_v.data();
  ip.cache_layer_stride = cache_elems;
  ip.src_slots = src.data();
  ip.dst_slots = dst.data();
  ip.positions = pos.data();
  ip.table = b.table();
  ip.tokens = std::int32_t(src.size());
  ip.layers = 1;
  ip.kv_heads = c.kv_heads;
  ip.head_dim = d;
  ip.dtype = c.dtype;
  ip.style = c.style;
  kv_inject_reference(ip);
  return b;
}

/// The attention parameters of one path over host buffers (`out`: tokens * heads * head_dim
/// elements of the dtype). paged: through the block table over cache_k/v; else unpaged over
/// copy_k/v.
inline SplitKvAttentionParams paged_kv_params(const PagedKvCase& c, PagedKvBuffers& b, bool paged,
                                              void* out) {
  SplitKvAttentionParams p;
  p.q = b.q.data();
  p.k = paged ? b.cache_k.data() : b.copy_k.data();
  p.v = paged ? b.cache_v.data() : b.copy_v.data();
  p.out = out;
  p.cu_q = b.cu_q.data();
  p.k_start = b.k_start.data();
  p.k_used = paged ? b.paged_used.data() : b.copy_used.data();
  p.q_token_stride = p.out_token_stride = std::int64_t(c.heads) * c.head_dim;
  p.q_head_stride = p.out_head_stride = c.head_dim;
  p.kv_row_stride = b.row;
  p.kv_head_stride = c.head_dim;
  p.segments = std::int32_t(c.segments.size());
  p.tokens = b.tokens;
  p.heads = c.heads;
  p.kv_heads = c.kv_heads;
  p.head_dim = c.head_dim;
  p.max_q = b.max_q;
  p.max_k = paged ? b.paged_max_k : b.copy_max_k;
  p.scale = 1.0f / std::sqrt(float(c.head_dim));
  p.dtype = c.dtype;
  if (paged) {
    p.paged.pages = b.pages.data();
    p.paged.page_start = b.page_start.data();
    p.paged.pool.k = b.pool_k.data();
    p.paged.pool.v = b.pool_v.data();
    p.paged.pool.block_stride = b.block_stride;
    p.paged.pool.block_tokens = b.block_tokens;
    p.paged.table = b.table();
    p.paged.style = c.style;
  }
  return p;
}

}  // namespace inferscale::test
