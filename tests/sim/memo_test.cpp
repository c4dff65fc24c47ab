// Memo against the values it was given: keys that share a cache slot, asked in turn, each
// computed once.
#include "sim/memo.h"

#include <cstdint>
#include <vector>

#include "tests/catch.h"
#include "traces/prng.h"

using namespace inferscale;

TEST_CASE("Memo returns each key's own value and computes it once", "[sim][memo]") {
  Memo<std::uint64_t, std::uint64_t> memo;
  std::vector<int> made(5000, 0);
  Rng rng(5);
  std::size_t wrong = 0;
  // 5,000 keys over 512 cache slots: most reads find another key in their slot.
  for (int i = 0; i < 200000; ++i) {
    const std::uint64_t k = rng.below(5000);
    const std::uint64_t v = memo.get(k << 32, [&] {
      ++made[k];
      return k * 7919 + 1;
    });
    if (v != k * 7919 + 1) ++wrong;
  }
  CHECK(wrong == 0);
  CHECK(memo.size() == 5000);
  for (const int m : made) CHECK(m == 1);
}
