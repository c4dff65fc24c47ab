#pragma once
// @brief Zipf laws over ranks for the synthetic generator: the unnormalised CDF and a table that
// draws from it by inverse CDF in a few reads.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

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

}  // namespace inferscale
