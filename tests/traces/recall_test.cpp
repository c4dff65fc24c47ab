#include "traces/recall.h"

#include "tests/catch.h"

using namespace inferscale;

TEST_CASE("dia ids parse with LoCoMo's typos") {
  std::vector<DiaKey> k;
  CHECK(parse_dia_ids("D8:6; D9:17", k) == 0);
  CHECK(parse_dia_ids("D:11:26", k) == 0);
  CHECK(parse_dia_ids("D30:05", k) == 0);
  CHECK(parse_dia_ids("D26:14, D26:34", k) == 0);
  CHECK(parse_dia_ids("D", k) == 1);
  CHECK(parse_dia_ids("D4:x", k) == 1);
  REQUIRE(k.size() == 6);
  CHECK(k[0] == make_dia_key(8, 6));
  CHECK(k[1] == make_dia_key(9, 17));
  CHECK(k[2] == make_dia_key(11, 26));
  CHECK(dia_id_string(k[3]) == "D30:5");
  CHECK(dia_id_string(k[5]) == "D26:34");
}

TEST_CASE("recall@k on a hand-made case") {
  const DiaKey a = make_dia_key(1, 1), b = make_dia_key(1, 2), c = make_dia_key(1, 3),
               d = make_dia_key(1, 5), e = make_dia_key(2, 1);
  RecallAccumulator acc({1, 2, 3});
  // Q1: evidence {a, b}. Retrieved, best last: {d}, {b}, {a, c}: a at rank 1, b at rank 2.
  // recall@1 = 1/2, @2 = 1, @3 = 1; both evidence turns have a fact: ceiling 1.
  acc.add_lists(1, {a, b, b}, {{d}, {b}, {a, c}}, {a, b, c, d});
  // Q2: evidence {e}, nothing retrieved covers it and the user has no fact from it: 0, ceiling 0.
  acc.add_lists(2, {e}, {{a}}, {a, b, c, d});
  // Not counted: adversarial (category 5) and questions without evidence.
  acc.add_lists(5, {a}, {{a}}, {a});
  acc.add_lists(1, {}, {{a}}, {a});
  const auto r = acc.report();
  CHECK(r.questions == 2);
  CHECK(r.evidence == 3);
  REQUIRE(r.recall.size() == 3);
  CHECK(r.recall[0] == Approx(0.25));  // (1/2 + 0) / 2
  CHECK(r.recall[1] == Approx(0.5));   // (1 + 0) / 2
  CHECK(r.recall[2] == Approx(0.5));
  CHECK(r.ceiling == Approx(0.5));
  CHECK(r.category_questions[1] == 1);
  CHECK(r.category_recall[1][0] == Approx(0.5));
  CHECK(r.category_recall[2][1] == Approx(0.0));
  CHECK(r.category_ceiling[1] == Approx(1.0));
}
