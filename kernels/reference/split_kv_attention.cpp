#include "kernels/reference/split_kv_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/reference/numeric.h"

namespace inferscale {

void split_kv_attention_reference(const SplitKvAttentionParams& p, float* weighted_abs) {
  const std::int64_t d = p.head_dim, group = p.heads / p.kv_heads;
  std::vector<double> k, v, q(d), w, acc(d), acc_abs(d);
  for (std::int32_t s = 0; s < p.segments; ++s) {
    const std::int64_t q0 = p.cu_q[s], n = p.cu_q[s + 1] - q0;
    const std::int64_t k0 = p.k_start[s], used = p.k_used[s];
    for (std::int64_t g = 0; g < p.kv_heads; ++g) {
      // The segment's keys and values of KV head g, widened once: [used, d].
      k.resize(std::size_t(used * d));
      v.resize(std::size_t(used * d));
      for (std::int64_t j = 0; j < used; ++j) {
        const std::int64_t row = (k0 + j) * p.kv_row_stride + g * p.kv_head_stride;
        for (std::int64_t c = 0; c < d; ++c) {
          k[std::size_t(j * d + c)] = load_elem(p.k, row + c, p.dtype);
          v[std::size_t(j * d + c)] = load_elem(p.v, row + c, p.dtype);
        }
      }
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
