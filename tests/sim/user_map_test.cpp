#include "sim/user_map.h"

#include "tests/catch.h"

using namespace inferscale;

TEST_CASE("a user map keeps small and large user ids apart and counts distinct users") {
  UserMap<int> m;
  CHECK(m.size() == 0);
  CHECK(m.find(3) == nullptr);
  m[3] = 7;
  m[UserId{1} << 40] = 9;  // beyond the dense range
  m[0] += 1;
  m[3] += 1;
  CHECK(m.size() == 3);
  REQUIRE(m.find(3) != nullptr);
  CHECK(*m.find(3) == 8);
  CHECK(*m.find(0) == 1);
  CHECK(*m.find(UserId{1} << 40) == 9);
  CHECK(m.find(2) == nullptr);  // inside the vector, never used
  CHECK(m.find(1000) == nullptr);
  CHECK(m.find((UserId{1} << 40) + 1) == nullptr);
}
