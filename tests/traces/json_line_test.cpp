#include "traces/json_line.h"

#include "tests/catch.h"

using inferscale::JsonLine;

TEST_CASE("JsonLine parses nested records and escapes") {
  JsonLine j;
  REQUIRE(j.parse(R"({"a": 1, "b": [1, 2, -3], "c": {"d": "x\"y\u00e9"}, "e": 2.5, "f": true})"));
  const auto& root = j.root();
  REQUIRE(root.type == JsonLine::Type::kObject);
  REQUIRE(root.children == 5);
  const auto& a = j.node(j.member(root, "a"));
  CHECK(a.integral);
  CHECK(a.int_value == 1);
  const auto& b = j.node(j.member(root, "b"));
  REQUIRE(b.children == 3);
  CHECK(j.node(j.node(j.node(b.first_child).next_sibling).next_sibling).int_value == -3);
  const auto& c = j.node(j.member(root, "c"));
  CHECK(j.str(j.node(j.member(c, "d"))) == "x\"y\xc3\xa9");
  const auto& e = j.node(j.member(root, "e"));
  CHECK_FALSE(e.integral);
  CHECK(e.number == 2.5);
  CHECK(j.member(root, "zzz") == 0);
}

TEST_CASE("JsonLine reports the column of a malformed value") {
  JsonLine j;
  CHECK_FALSE(j.parse(R"({"a": 1, "b": [1, 2)"));
  CHECK(j.error().find("truncated") != std::string::npos);
  CHECK_FALSE(j.parse(R"({"a": tru})"));
  CHECK(j.error_column() == 7);
  CHECK_FALSE(j.parse(R"({"a": 1} x)"));
  CHECK(j.error_column() == 10);
}

TEST_CASE("JsonLine rejects numbers out of range and leading zeros at their column") {
  JsonLine j;
  CHECK_FALSE(j.parse(R"({"a": 1e999})"));
  CHECK(j.error() == "number out of range");
  CHECK(j.error_column() == 7);
  CHECK_FALSE(j.parse(R"({"a": [1, -1e999]})"));
  CHECK(j.error() == "number out of range");
  CHECK(j.error_column() == 11);
  CHECK_FALSE(j.parse(R"({"a": 0268435455})"));
  CHECK(j.error().find("leading zero") != std::string::npos);
  CHECK(j.error_column() == 7);
  CHECK_FALSE(j.parse(R"({"a": -00.5})"));
  CHECK(j.error_column() == 7);
  // Still numbers: zero itself, a fraction after zero, an underflow (as close to 0 as it gets).
  REQUIRE(j.parse(R"({"a": 0, "b": 0.25, "c": -0, "d": 1e-999})"));
  const auto& root = j.root();
  CHECK(j.node(j.member(root, "a")).int_value == 0);
  CHECK(j.node(j.member(root, "b")).number == 0.25);
  CHECK(j.node(j.member(root, "d")).number == 0.0);
}
