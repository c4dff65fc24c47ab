// (c) Composed positions are contiguous; computed-token chunks map to the right positions.
#include <stdexcept>

#include "executor/gpu/prompt_layout.h"
#include "tests/catch.h"
#include "tests/executor/executor_test_util.h"

using namespace inferscale;
using namespace inferscale::test;

TEST_CASE("(c) a composed prompt tiles its positions exactly") {
  PromptSpec p;
  p.facts = {{1, 5}, {2, 7, false}, {3, 4}};
  p.header_cached = true;
  BatchPlan plan;
  add_prefill(plan, p, 0, p.computed_total());
  const auto pieces = compose_prompt(plan.prefills[0], plan.prompt_facts);
  std::uint32_t next = 0, computed = 0;
  for (const PromptPiece& piece : pieces) {
    CHECK(piece.position == next);
    next += piece.tokens;
    computed += piece.computed ? piece.tokens : 0;
  }
  CHECK(next == p.prompt_tokens());
  CHECK(computed == p.computed_total());  // inline fact 2, footer, query

  // Chunks of the computed tokens: runs break where injected KV sits in between.
  const auto runs = computed_runs(pieces, 0, p.computed_total());
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].position == p.fact_position(1));
  CHECK(runs[0].tokens == 7);
  CHECK(runs[1].position == p.fact_position(2) + 4);
  CHECK(runs[1].tokens == p.footer + p.query);
  const auto part = computed_runs(pieces, 3, 9);
  REQUIRE(part.size() == 2);
  CHECK(part[0].position == p.fact_position(1) + 3);
  CHECK(part[0].tokens == 4);
  CHECK(part[1].tokens == 2);
}

TEST_CASE("(c) gaps, overlaps and wrong totals are rejected") {
  PromptSpec p;
  p.facts = {{1, 5}, {2, 7}};
  BatchPlan plan;
  add_prefill(plan, p, 0, p.computed_total());
  plan.prompt_facts[1].position += 1;  // a gap
  CHECK_THROWS_AS(compose_prompt(plan.prefills[0], plan.prompt_facts), std::invalid_argument);
  plan.prompt_facts[1].position -= 2;  // an overlap
  CHECK_THROWS_AS(compose_prompt(plan.prefills[0], plan.prompt_facts), std::invalid_argument);
  plan.prompt_facts[1].position += 1;
  CHECK_NOTHROW(compose_prompt(plan.prefills[0], plan.prompt_facts));
  plan.prefills[0].computed_total += 1;
  CHECK_THROWS_AS(compose_prompt(plan.prefills[0], plan.prompt_facts), std::invalid_argument);
}
