// The Zipf table's guided search against a plain binary search over the same CDF: at every
// bucket edge, every CDF value and their neighbours (where rounding decides), and on random draws.
#include "traces/zipf.h"

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
