#include "kernels/reference/split_kv_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/reference/numeric.h"
#include "kernels/reference/rope.h"

namespace inferscale {

namespace {

/// The keys and values of segment s, KV head g, widened: [used, d] each; returns `used`, the
/// keys present (a paged context's masked offsets dropped, in order).
std::int64_t gather_segment(const SplitKvAttentionParams& p, std::int32_t s, std::int64_t g,
                            std::vector<double>& k, std::vector<double>& v,
                            std::vector<unsigned char>& rotated) {
  const std::int64_t d = p.head_dim;
  auto widen = [&](const void* kb, std::int64_t koff, const void* vb, std::int64_t voff) {
    for (std::int64_t c = 0; c < d; ++c) {
      k.push_back(load_elem(kb, koff + c, p.dtype));
      v.push_back(load_elem(vb, voff + c, p.dtype));
    }
  };
  k.clear();
  v.clear();
  if (p.paged.pages == nullptr) {
    for (std::int64_t j = 0; j < p.k_used[s]; ++j) {
      const std::int64_t row = (p.k_start[s] + j) * p.kv_row_stride + g * p.kv_head_stride;
      widen(p.k, row, p.v, row);
    }
    return p.k_used[s];
  }
  const PagedKvView& pv = p.paged;
  const std::int64_t pool_row = std::int64_t(p.kv_heads) * d;  // PoolView: one token of a layer
  rotated.resize(std::size_t(d) * std::size_t(dtype_bytes(p.dtype)));
  for (std::int32_t e = pv.page_start[s]; e < pv.page_start[s + 1]; ++e) {
    const PagedKvEntry& page = pv.pages[e];
    for (std::int32_t i = 0; i < page.tokens; ++i) {
      if (page.kind == PagedKvKind::kCache) {
        const std::int64_t row =
            std::int64_t(page.row + i) * p.kv_row_stride + g * p.kv_head_stride;
        widen(p.k, row, p.v, row);
        continue;
      }
      const std::int64_t slot = page.row + i;
      const std::int64_t off = (slot / pv.pool.block_tokens) * pv.pool.block_stride +
                               (slot % pv.pool.block_tokens) * pool_row + g * d;
      // Rotated and rounded to the dtype exactly as kv_inject_reference writes the cache row.
      const std::int32_t pos =
          page.kind == PagedKvKind::kPoolPreRope ? page.position + i : page.position;
      rope_row_reference<true>(pv.pool.k, off, rotated.data(), 0, p.head_dim, pv.style, pv.table,
                               pos, p.dtype);
      widen(rotated.data(), 0, pv.pool.v, off);
    }
  }
  return std::int64_t(k.size()) / d;
}

}  // namespace

void split_kv_attention_reference(const SplitKvAttentionParams& p, float* weighted_abs) {
  const std::int64_t d = p.head_dim, group = p.heads / p.kv_heads;
  std::vector<double> k, v, q(d), w, acc(d), acc_abs(d);
  std::vector<unsigned char> rotated;
  for (std::int32_t s = 0; s < p.segments; ++s) {
    const std::int64_t q0 = p.cu_q[s], n = p.cu_q[s + 1] - q0;
    for (std::int64_t g = 0; g < p.kv_heads; ++g) {
      // The segment's keys and values of KV head g, widened once: [used, d].
      const std::int64_t used = gather_segment(p, s, g, k, v, rotated);
      for (std::int64_t i = 0; i < n; ++i) {
        const std::int64_t t = q0 + i, last = used - n + i;  // query i sees keys 0 .. last
        for (std::int64_t h = g * group; h < (g + 1) * group; ++h) {
          const std::int64_t qi = t * p.q_token_stride + h * p.q_head_stride;
          for (std::int64_t c = 0; c < d; ++c) q[std::size_t(c)] = load_elem(p.q, qi + c, p.dtype);
          w.assign(std::size_t(last + 1), 0.0);
          double mx = -INFINITY;
          for (std::int64_t j = 0; j <= last; ++j) {
            double dot = 0.0;
            for (std::int64_t c = 0; c < d; ++c)
              dot += q[std::size_t(c)] * k[std::size_t(j * d + c)];
            w[std::size_t(j)] = double(p.scale) * dot;
            mx = std::max(mx, w[std::size_t(j)]);
          }
          double sum = 0.0;
          for (double& x : w) sum += (x = std::exp(x - mx));
          std::fill(acc.begin(), acc.end(), 0.0);
          std::fill(acc_abs.begin(), acc_abs.end(), 0.0);
          for (std::int64_t j = 0; j <= last; ++j) {
            for (std::int64_t c = 0; c < d; ++c) {
              const double x = v[std::size_t(j * d + c)];
              acc[std::size_t(c)] += w[std::size_t(j)] * x;
              acc_abs[std::size_t(c)] += w[std::size_t(j)] * std::abs(x);
            }
          }
          const std::int64_t oi = t * p.out_token_stride + h * p.out_head_stride;
          for (std::int64_t c = 0; c < d; ++c) {
            store_elem(p.out, oi + c, p.dtype, float(acc[std::size_t(c)] / sum));
            if (weighted_abs != nullptr) {
              weighted_abs[(t * p.heads + h) * d + c] = float(acc_abs[std::size_t(c)] / sum);
            }
          }
        }
      }
    }
  }
}

}  // namespace inferscale
