#include "traces/stats.h"

#include <nlohmann/json.hpp>

#include "tests/catch.h"
#include "traces/error.h"

using namespace inferscale;

// traces/samples/tiny.jsonl, worked out by hand (see traces/README.md):
//   facts: user 0: 12, 8, 20 tokens + memory write 14; user 1: 10, 16.
//   requests: k = 3, 2, 3, 1, 2; arrivals 1 s .. 5 s.
//   recall: 4 questions with evidence (cat. 1, 4, 2, 1): 1, 1, 1, 0 -> 0.75; every evidence turn
//   has a fact of the asking user -> ceiling 1.
TEST_CASE("stats of the tiny sample trace") {
  StatsOptions o;
  o.kv_bytes_per_token = 1000;
  const auto s = trace_stats(INFERSCALE_SOURCE_DIR "/traces/samples/tiny.jsonl", o);
  CHECK(s.has_header);
  CHECK(s.header.k == 3);
  CHECK(s.users == 2);
  CHECK(s.facts == 5);
  CHECK(s.memory_writes == 1);
  CHECK(s.requests == 5);
  CHECK(s.k.min == 1);
  CHECK(s.k.max == 3);
  CHECK(s.k.mean == Approx(2.2));
  CHECK(s.k_p50 == 2);
  CHECK(s.fact_tokens.min == 8);
  CHECK(s.fact_tokens.max == 20);
  CHECK(s.fact_tokens.mean == Approx(80.0 / 6));
  CHECK(s.facts_per_user.min == 2);
  CHECK(s.facts_per_user.max == 4);
  CHECK(s.fact_tokens_per_user.min == 26);
  CHECK(s.fact_tokens_per_user.max == 54);
  CHECK(s.fact_kv_bytes_per_user.mean == Approx(40000));
  CHECK(s.total_fact_kv_bytes == Approx(80000));
  CHECK(s.requests_per_user.max == 3);
  CHECK(s.query_tokens.mean == Approx(8.2));
  CHECK(s.output_tokens.mean == Approx(22));
  CHECK(s.context_turns.n == 5);
  CHECK(s.context_turns.mean == Approx(2.2));
  CHECK(s.first_request_ns == kNsPerS);
  CHECK(s.last_request_ns == 5 * kNsPerS);
  CHECK(s.arrival_rate_per_s == Approx(1.0));
  REQUIRE(s.has_recall);
  CHECK(s.recall.questions == 4);
  CHECK(s.recall.evidence == 5);
  CHECK(s.recall.ks == std::vector<std::uint32_t>{5});  // larger k than any request: dropped
  CHECK(s.recall.recall[0] == Approx(0.75));
  CHECK(s.recall.ceiling == Approx(1.0));
  CHECK(s.recall.category_recall[1][0] == Approx(0.5));

  const auto j = nlohmann::json::parse(stats_json(s));
  CHECK(j["requests"] == 5);
  CHECK(j["recall"]["recall_at"]["5"].get<double>() == Approx(0.75));
  const auto text = stats_text(s);
  CHECK(text.find("requests: 5") != std::string::npos);
  CHECK(text.find("| 5 | 0.750 |") != std::string::npos);
}

TEST_CASE("stats of a malformed trace is an InputError with a position") {
  CHECK_THROWS_AS(trace_stats(INFERSCALE_SOURCE_DIR "/traces/README.md"), InputError);
  CHECK_THROWS_AS(trace_stats("/nonexistent.jsonl"), InputError);
}
