// The Zipf table's guided search against a plain binary search over the same CDF: at every
// bucket edge, every CDF value and their neighbours (where rounding decides), and on random draws.
#include "traces/zipf.h"

#include <algorithm>
#include <cmath>

#include "tests/catch.h"

using namespace inferscale;

namespace {

std::size_t plain_rank(const std::vector<double>& cum, double x) {
  const auto it = std::upper_bound(cum.begin(), cum.end(), x);
  return std::min(static_cast<std::size_t>(it - cum.begin()), cum.size() - 1);
}

}  // namespace

TEST_CASE("ZipfTable ranks equal a binary search of the CDF", "[traces][zipf]") {
  const std::size_t n = GENERATE(as<std::size_t>{}, 1, 2, 3, 7, 64, 1000, 100003);
  const double s = GENERATE(0.0, 0.5, 1.0, 1.3, 3.0);
  CAPTURE(n, s);
  const ZipfTable table(n, s);
  const std::vector<double>& cum = table.cdf();
  REQUIRE(cum.size() == n);
  const double total = cum.back();
  std::size_t mismatches = 0;
  auto check = [&](double x) {
    if (x < 0 || x > total) return;
    if (table.rank_of(x) != plain_rank(cum, x)) ++mismatches;
  };
  const std::size_t step = std::max<std::size_t>(1, n / 5000);
  for (std::size_t i = 0; i < n; i += step) {
    const double e = total * static_cast<double>(i) / static_cast<double>(n);
    for (const double x : {e, cum[i]}) {
      check(x);
      check(std::nextafter(x, 0.0));
      check(std::nextafter(x, 2 * total));
    }
  }
  check(0.0);
  check(total);
  Rng a(42), b(42);
  for (int i = 0; i < 20000; ++i) {
    const std::size_t drawn = table.draw(a);
    const double x = b.uniform() * total;
    if (drawn != plain_rank(cum, x)) ++mismatches;
    REQUIRE(drawn < n);
  }
  CHECK(mismatches == 0);
}

namespace {

/// The definition, one draw at a time: scan the ranks not drawn yet, by weight.
std::vector<std::uint32_t> scan_ranking(Rng& rng, std::uint32_t n, std::uint32_t k, double s) {
  std::vector<double> w(n);
  for (std::uint32_t i = 0; i < n; ++i) w[i] = s == 0 ? 1.0 : std::pow(double(i + 1), -s);
  std::vector<std::uint32_t> out;
  for (std::uint32_t d = 0; d < k && d < n; ++d) {
    double total = 0;
    for (const double v : w) total += v;
    double x = rng.uniform() * total;
    std::uint32_t i = 0;
    while (i + 1 < n && (w[i] == 0 || x >= w[i])) x -= w[i++];
    while (w[i] == 0) --i;  // past the last rank left (rounding): the last one left
    out.push_back(i);
    w[i] = 0;
  }
  return out;
}

}  // namespace

TEST_CASE("ZipfSampler rankings equal a scan of the ranks left, draw by draw", "[traces][zipf]") {
  // Blocks of running sums up to ZipfSampler::kMaxBlocked ranks, a tree past it.
  const std::uint32_t max_n = GENERATE(1u, 15u, 16u, 17u, 172u, 1000u, 4096u, 5000u);
  const double s = GENERATE(0.0, 0.8, 2.0);
  CAPTURE(max_n, s);
  ZipfSampler sampler(max_n, s);
  Rng a(7), b(7), sizes(11);
  std::vector<std::uint32_t> drawn;
  std::size_t mismatches = 0;
  const int requests = max_n > 1000 ? 300 : 3000;  // the scan is slow on long laws
  for (int r = 0; r < requests; ++r) {
    const auto n = static_cast<std::uint32_t>(1 + sizes.below(max_n));
    const auto k = static_cast<std::uint32_t>(1 + sizes.below(std::min<std::uint32_t>(n, 60)));
    sampler.draw(a, n, k, drawn);
    const auto expected = scan_ranking(b, n, k, s);
    REQUIRE(drawn.size() == k);
    for (const auto i : drawn) REQUIRE(i < n);
    if (drawn != expected) ++mismatches;
  }
  // Sums taken in another order could differ where a point falls within rounding of a boundary:
  // none does on these draws.
  CHECK(mismatches == 0);
}

TEST_CASE("ZipfSampler draws every rank once when k = n", "[traces][zipf]") {
  ZipfSampler sampler(40, 0.8);
  Rng rng(3);
  std::vector<std::uint32_t> drawn;
  for (const std::uint32_t n : {1u, 16u, 33u, 40u}) {
    sampler.draw(rng, n, n, drawn);
    std::sort(drawn.begin(), drawn.end());
    std::vector<std::uint32_t> all(n);
    for (std::uint32_t i = 0; i < n; ++i) all[i] = i;
    CHECK(drawn == all);
  }
}
