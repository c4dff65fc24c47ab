// CPU reference of the rotary embedding. Built with -ffp-contract=off (kernels/reference/
// CMakeLists.txt) so that every product and sum is rounded, as the kernels' __fmul_rn /
// __fadd_rn do: the two agree bit for bit.
#include "kernels/reference/rope.h"

#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "kernels/reference/numeric.h"

namespace inferscale {

std::vector<double> rope_inv_freq(const RopeTableSpec& spec) {
  if (spec.head_dim <= 0 || spec.head_dim % 2 != 0) {
    throw std::invalid_argument("rope_inv_freq: head_dim must be even and positive");
  }
  const int half = spec.head_dim / 2;
  std::vector<double> inv(half);
  for (int i = 0; i < half; ++i) inv[i] = std::pow(spec.theta, -2.0 * i / spec.head_dim);
  if (spec.scaling_factor > 1.0) {
    // llama3: long wavelengths are slowed by `factor`, short ones kept, the band between blended.
    const double pi = std::acos(-1.0);
    const double old_len = spec.original_max_positions;
    const double low_wavelen = old_len / spec.low_freq_factor;
    const double high_wavelen = old_len / spec.high_freq_factor;
    for (double& f : inv) {
      const double wavelen = 2.0 * pi / f;
      if (wavelen < high_wavelen) continue;
      if (wavelen > low_wavelen) {
        f /= spec.scaling_factor;
        continue;
      }
      const double smooth = (old_len / wavelen - spec.low_freq_factor) /
                            (spec.high_freq_factor - spec.low_freq_factor);
      f = (1.0 - smooth) * f / spec.scaling_factor + smooth * f;
    }
  }
  return inv;
}

void rope_table_build(const RopeTableSpec& spec, float* cos, float* sin) {
  const std::vector<double> inv = rope_inv_freq(spec);
  const std::int64_t half = std::int64_t(inv.size());
  for (std::int64_t p = 0; p < spec.positions; ++p) {
    for (std::int64_t i = 0; i < half; ++i) {
      const double angle = double(p) * inv[i];
      cos[p * half + i] = float(std::cos(angle));
      sin[p * half + i] = float(std::sin(angle));
    }
  }
}

template <bool Forward>
void rope_row_reference(const void* in, std::int64_t in_off, void* out, std::int64_t out_off,
                        std::int32_t head_dim, RopeStyle style, const RopeTableView& table,
                        std::int32_t position, DType dtype) {
  const std::int32_t half = head_dim / 2;
  const std::int32_t row = std::abs(position);
  if (row >= table.positions) throw std::out_of_range("rope: position outside the rotary table");
  const float* cos_row = table.cos + std::int64_t(row) * half;
  const float* sin_row = table.sin + std::int64_t(row) * half;
  for (std::int32_t i = 0; i < half; ++i) {
    const std::int32_t ia = style == RopeStyle::kNeox ? i : 2 * i;
    const std::int32_t ib = style == RopeStyle::kNeox ? i + half : 2 * i + 1;
    const float a = load_elem(in, in_off + ia, dtype);
    const float b = load_elem(in, in_off + ib, dtype);
    const float c = cos_row[i];
    const float s = position < 0 ? -sin_row[i] : sin_row[i];
    float oa, ob;
    if (Forward) {
      oa = a * c - b * s;
      ob = b * c + a * s;
    } else {
      oa = a * c + b * s;
      ob = b * c - a * s;
    }
    store_elem(out, out_off + ia, dtype, oa);
    store_elem(out, out_off + ib, dtype, ob);
  }
}

template <bool Forward>
void rope_rotate_reference(const RopeParams& p) {
  for (std::int64_t t = 0; t < p.tokens; ++t) {
    for (std::int64_t h = 0; h < p.heads; ++h) {
      const std::int64_t off = t * p.token_stride + h * p.head_stride;
      rope_row_reference<Forward>(p.in, off, p.out, off, p.head_dim, p.style, p.table,
                                  p.positions[t], p.dtype);
    }
  }
}

template void rope_row_reference<true>(const void*, std::int64_t, void*, std::int64_t, std::int32_t,
                                       RopeStyle, const RopeTableView&, std::int32_t, DType);
template void rope_row_reference<false>(const void*, std::int64_t, void*, std::int64_t,
                                        std::int32_t, RopeStyle, const RopeTableView&, std::int32_t,
                                        DType);
template void rope_rotate_reference<true>(const RopeParams&);
template void rope_rotate_reference<false>(const RopeParams&);

}  // namespace inferscale
