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
