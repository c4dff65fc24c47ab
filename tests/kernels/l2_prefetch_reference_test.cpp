// CPU: the lines an L2 prefetch touches (kernels/reference/l2_prefetch.h): the range's first
// byte's line through its last byte's line, none for an empty range.
#include <cstdint>

#include "kernels/reference/l2_prefetch.h"
#include "tests/catch.h"

using namespace inferscale;

TEST_CASE("an L2 prefetch touches the lines from the range's first byte to its last") {
  auto at = [](std::uintptr_t a) { return reinterpret_cast<const void*>(a); };
  const std::uintptr_t base = 1u << 20;  // a line boundary
  struct Case {
    std::uintptr_t offset;
    std::size_t bytes, lines;
  };
  const Case cases[] = {{0, 1, 1},    {0, 128, 1},   {0, 129, 2},  {127, 1, 1},   {127, 2, 2},
                        {64, 128, 2}, {128, 128, 1}, {5, 1000, 8}, {0, 4096, 32}, {100, 4096, 33}};
  for (const Case& c : cases) {
    INFO("offset " << c.offset << " bytes " << c.bytes);
    const L2Lines r = l2_lines(at(base + c.offset), c.bytes);
    CHECK(r.count == c.lines);
    CHECK(reinterpret_cast<std::uintptr_t>(r.first) == base + (c.offset / 128) * 128);
  }
  CHECK(l2_lines(at(base), 0).count == 0);
  CHECK(l2_lines(nullptr, 64).count == 0);
}
