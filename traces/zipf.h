#pragma once
// @brief Zipf laws over ranks for the synthetic generator: the unnormalised CDF, a table that
// draws from it by inverse CDF in a few reads, and a sampler of rankings without replacement.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "traces/prng.h"

namespace inferscale {

/// Unnormalised Zipf CDF: cum[i] = sum over ranks 1..i+1 of rank^-s.
inline std::vector<double> zipf_cdf(std::size_t n, double s) {
  std::vector<double> cum(n);
  double total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    total += s == 0 ? 1.0 : std::pow(static_cast<double>(i + 1), -s);
    cum[i] = total;
  }
  return cum;
}

/// A Zipf law over n ranks drawn by inverse CDF. A guide table (one entry per rank: where the
/// CDF passes each of n evenly spaced points) starts each search near its answer, so that a
/// draw reads a few neighbouring entries instead of a binary search over the whole CDF (at a
/// million users, about twenty cache misses). Its draws equal the plain binary search's.
class ZipfTable {
 public:
  ZipfTable() = default;
  ZipfTable(std::size_t n, double s) : cum_(zipf_cdf(n, s)), guide_(n + 1) {
    // guide_[b]: the first rank whose CDF exceeds edge(b) (upper_bound), in one sweep.
    std::size_t i = 0;
    for (std::size_t b = 0; b <= n; ++b) {
      const double e = edge(b);
      while (i < n && cum_[i] <= e) ++i;
      guide_[b] = i;
    }
  }
  /// 0-based rank in [0, n).
  std::size_t draw(Rng& rng) const { return rank_of(rng.uniform() * cum_.back()); }
  /// The rank at point x of the unnormalised CDF: the first whose CDF exceeds x, at most n - 1.
  std::size_t rank_of(double x) const {
    const std::size_t n = cum_.size();
    // The bucket b with edge(b) <= x < edge(b + 1) (or the last one), rounding fixed up; the
    // CDF is monotone, so the answer lies between the bucket's two guide entries.
    auto b = std::min(
        static_cast<std::size_t>(std::max(0.0, x / cum_[n - 1] * static_cast<double>(n))), n - 1);
    while (b > 0 && x < edge(b)) --b;
    while (b + 1 < n && x >= edge(b + 1)) ++b;
    const auto it = std::upper_bound(cum_.begin() + guide_[b], cum_.begin() + guide_[b + 1], x);
    return std::min(static_cast<std::size_t>(it - cum_.begin()), n - 1);
  }

  const std::vector<double>& cdf() const { return cum_; }

 private:
  double edge(std::size_t b) const {
    return cum_.back() * static_cast<double>(b) / static_cast<double>(cum_.size());
  }
  std::vector<double> cum_;
  std::vector<std::size_t> guide_;
};

/// Draws k distinct ranks from the first n of a Zipf law, one after another, each with
/// probability proportional to its weight among the ranks not drawn yet (so the draw order is a
/// ranking: first drawn = most relevant). One uniform a draw.
///
/// Up to kMaxBlocked ranks (a LoCoMo-shaped user has at most 172 facts) the ranks are cut into
/// blocks of 16; the sampler keeps, for the current weights (a drawn rank weighs 0), each
/// block's running total and the running sums within each block. A draw counts the block totals
/// at or below its point, then the sums within that block: two short runs of independent
/// comparisons rather than a chain of dependent ones, and a removal is two short runs of
/// subtractions. A request starts from sums computed once for the longest law. Longer laws
/// (where the runs grow long) use a Fenwick tree over the weights, rebuilt for each request.
/// Both draw the same ranks: the first whose running sum of the weights left passes the point.
class ZipfSampler {
 public:
  static constexpr std::uint32_t kBlock = 16;
  static constexpr std::size_t kMaxBlocked = 4096;

  ZipfSampler(std::size_t max_n, double s) {
    const std::size_t blocks = (max_n + kBlock - 1) / kBlock;
    weight_.assign(blocks * kBlock, 0.0);
    for (std::size_t i = 0; i < max_n; ++i) {
      weight_[i] = s == 0 ? 1.0 : std::pow(static_cast<double>(i + 1), -s);
    }
    removed_.resize(blocks * kBlock);
    if (max_n > kMaxBlocked) {
      tree_.resize(2 * max_n + 2);
      return;
    }
    pristine_within_.resize(blocks * kBlock);
    pristine_ends_.resize(blocks);
    double end = 0;
    for (std::size_t b = 0; b < blocks; ++b) {
      double within = 0;
      for (std::uint32_t j = 0; j < kBlock; ++j) {
        within += weight_[b * kBlock + j];
        pristine_within_[b * kBlock + j] = within;
      }
      end += within;
      pristine_ends_[b] = end;
    }
    within_.resize(blocks * kBlock);
    ends_.resize(blocks);
  }

  /// `out`: the k ranks in [0, n) drawn, first drawn first. n at most the constructor's max_n.
  void draw(Rng& rng, std::uint32_t n, std::uint32_t k, std::vector<std::uint32_t>& out) {
    out.clear();
    if (n == 0) return;
    if (!tree_.empty()) {
      draw_by_tree(rng, n, k, out);
      return;
    }
    const std::uint32_t blocks = (n + kBlock - 1) / kBlock;
    const std::uint32_t last = blocks - 1;
    std::copy_n(pristine_within_.begin(), blocks * kBlock, within_.begin());
    // Ranks past n never count: their running sums are +inf.
    std::fill(within_.begin() + n, within_.begin() + blocks * kBlock, kInf);
    std::copy_n(pristine_ends_.begin(), last, ends_.begin());
    ends_[last] = (last > 0 ? ends_[last - 1] : 0.0) + within_[n - 1];
    std::fill_n(removed_.begin(), n, std::uint8_t{0});
    for (std::uint32_t d = 0; d < k && d < n; ++d) {
      const double x = rng.uniform() * ends_[last];
      // The block: how many blocks end at or before x (rounding can make it all of them).
      const std::uint32_t b = std::min(count_at_or_below(ends_.data(), blocks, x), last);
      const double y = x - (b > 0 ? ends_[b - 1] : 0.0);
      double* within = within_.data() + b * kBlock;
      const std::uint32_t item = take_nearest_left(
          std::min(b * kBlock + std::min(count_at_or_below(within, kBlock, y), kBlock - 1), n - 1),
          n);
      out.push_back(item);
      const double w = weight_[item];
      const std::uint32_t bi = item / kBlock, j = item % kBlock;  // bi: b unless rounding moved it
      within = within_.data() + bi * kBlock;
      subtract_from(within, j, kBlock, w);
      subtract_from(ends_.data(), bi, blocks, w);
    }
  }

 private:
  static constexpr double kInf = std::numeric_limits<double>::infinity();

  void draw_by_tree(Rng& rng, std::uint32_t n, std::uint32_t k, std::vector<std::uint32_t>& out) {
    // Linear-time Fenwick build over weight_[0, n).
    for (std::uint32_t i = 1; i <= n; ++i) tree_[i] = weight_[i - 1];
    for (std::uint32_t i = 1; i <= n; ++i) {
      const std::uint32_t j = i + (i & (~i + 1));
      if (j <= n) tree_[j] += tree_[i];
    }
    std::fill_n(removed_.begin(), n, std::uint8_t{0});
    std::uint32_t top = 1;
    while (top * 2 <= n) top *= 2;
    // Entries past n are +inf so the descent needs no bound check.
    for (std::uint32_t i = n + 1; i < 2 * top; ++i) tree_[i] = kInf;
    double total = 0;
    for (std::uint32_t i = n; i > 0; i -= i & (~i + 1)) total += tree_[i];
    for (std::uint32_t d = 0; d < k && d < n; ++d) {
      double x = rng.uniform() * total;
      std::uint32_t pos = 0;  // ranks whose running sum is at or below x
      for (std::uint32_t step = top; step > 0; step /= 2) {
        const double t = tree_[pos + step];
        if (t <= x) {
          pos += step;
          x -= t;
        }
      }
      const std::uint32_t item = take_nearest_left(std::min(pos, n - 1), n);
      out.push_back(item);
      const double w = weight_[item];
      total -= w;
      for (std::uint32_t i = item + 1; i <= n; i += i & (~i + 1)) tree_[i] -= w;
    }
  }
  /// Rounding can land on a removed rank or past the end: the nearest one left, marked drawn.
  std::uint32_t take_nearest_left(std::uint32_t item, std::uint32_t n) {
    while (removed_[item] && item + 1 < n) ++item;
    while (removed_[item] && item > 0) --item;
    removed_[item] = 1;
    return item;
  }

  /// How many of v[0, m) are at or below x.
  static std::uint32_t count_at_or_below(const double* v, std::uint32_t m, double x) {
    std::uint32_t t = 0, c = 0;
#if defined(__SSE2__)
    // Two lanes a compare; a true lane is all ones, -1 as an integer: subtracting counts it.
    const __m128d xx = _mm_set1_pd(x);
    __m128i sum = _mm_setzero_si128();
    for (; t + 2 <= m; t += 2) {
      sum = _mm_sub_epi64(sum, _mm_castpd_si128(_mm_cmple_pd(_mm_loadu_pd(v + t), xx)));
    }
    c = static_cast<std::uint32_t>(_mm_cvtsi128_si64(sum) +
                                   _mm_cvtsi128_si64(_mm_unpackhi_epi64(sum, sum)));
#endif
    for (; t < m; ++t) c += v[t] <= x ? 1u : 0u;
    return c;
  }
  /// v[t] -= w for t in [from, m).
  static void subtract_from(double* v, std::uint32_t from, std::uint32_t m, double w) {
    std::uint32_t t = 0;
#if defined(__SSE2__)
    const __m128d ww = _mm_set1_pd(w);
    const __m128d ff = _mm_set1_pd(static_cast<double>(from));
    __m128d idx = _mm_set_pd(1.0, 0.0);
    const __m128d two = _mm_set1_pd(2.0);
    for (; t + 2 <= m; t += 2, idx = _mm_add_pd(idx, two)) {
      const __m128d take = _mm_and_pd(_mm_cmpge_pd(idx, ff), ww);  // w where t >= from, else 0
      _mm_storeu_pd(v + t, _mm_sub_pd(_mm_loadu_pd(v + t), take));
    }
#endif
    for (; t < m; ++t) v[t] -= t >= from ? w : 0.0;
  }
  std::vector<double> weight_;           // by rank, zero past max_n
  std::vector<double> pristine_within_;  // running sums within each block, nothing drawn
  std::vector<double> pristine_ends_;    // running totals at each block's end, nothing drawn
  std::vector<double> within_, ends_;    // the same for the request being drawn
  std::vector<double> tree_;  // longer laws: 1-based Fenwick tree; [n + 1, 2 * top) hold +inf
  std::vector<std::uint8_t> removed_;
};

}  // namespace inferscale
