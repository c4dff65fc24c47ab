// LoCoMo as distributed: the counts the importer must reproduce, and the loader's rules on
// small hand-made inputs.
#include "traces/locomo.h"

#include <cstdlib>
#include <filesystem>
#include <set>

#include "tests/catch.h"
#include "tests/traces/locomo_fixture.h"
#include "traces/error.h"

using namespace inferscale;

namespace {

const LocomoData& locomo() {
  static const LocomoData data = [] {
    std::string why;
    const std::string path = test::real_locomo(why);
    INFO(why);
    REQUIRE(!path.empty());
    return load_locomo(path);
  }();
  return data;
}

}  // namespace

TEST_CASE("LoCoMo counts: 10 conversations, 20 speakers, 2541 facts, 1986 questions") {
  const auto& d = locomo();
  CHECK(d.conversations.size() == 10);
  std::set<std::pair<std::string, std::string>> speakers;
  std::size_t turns = 0, answerable = 0;
  for (const auto& c : d.conversations) {
    speakers.insert({c.id, c.speakers[0]});
    speakers.insert({c.id, c.speakers[1]});
    turns += c.turns.size();
    for (const auto& q : c.qa) answerable += q.category <= 4 ? 1 : 0;
    CHECK(c.first_date_min < c.last_date_min);
  }
  CHECK(speakers.size() == 20);
  CHECK(turns == 5882);
  CHECK(d.facts() == 2541);
  CHECK(d.questions() == 1986);
  CHECK(answerable == 1540);
  // File-name order: 26, 30, 41, ...
  CHECK(d.conversations[0].id == "26");
  CHECK(d.conversations[0].speakers[0] == "Caroline");
  CHECK(d.conversations[1].id == "30");
}

TEST_CASE("LoCoMo facts keep their source turns and resolve to a turn") {
  const auto& d = locomo();
  std::size_t multi = 0;
  for (const auto& c : d.conversations) {
    for (const auto& facts : c.facts) {
      for (const auto& f : facts) {
        REQUIRE_FALSE(f.sources.empty());
        multi += f.sources.size() > 1 ? 1 : 0;
        CHECK(c.turn_position(f.sources.back()) >= 0);
        CHECK(f.words > 0);
      }
    }
  }
  CHECK(multi > 0);  // lists and "D1:2, D1:4" strings become several sources
}

TEST_CASE("LoCoMo loader: list layout, sources, anchors and the question-speaker rules") {
  LocomoData d;
  load_locomo_json(test::kTwoConversations, "two.json", d);
  REQUIRE(d.conversations.size() == 2);
  const auto& x = d.conversations[0];
  CHECK(x.id == "X");
  REQUIRE(x.turns.size() == 5);
  CHECK(x.turns[1].words == 7);  // "Bob:" + 6 words
  REQUIRE(x.facts[0].size() == 3);
  REQUIRE(x.facts[1].size() == 2);
  CHECK(x.facts[0][2].text == "Ann will visit Bob in Paris.");
  CHECK(x.facts[0][2].source == "D2:2,D2:1");
  CHECK(x.facts[0][2].anchor_turn == 4);  // the latest source turn, D2:2
  CHECK(x.facts[0][2].session == 2);
  CHECK(x.facts[1][1].anchor_turn == 3);
  CHECK(x.facts[0][0].date_min + 10 * 24 * 60 == x.facts[0][2].date_min);
  REQUIRE(x.qa.size() == 5);
  CHECK(x.qa[0].speaker == 0);  // majority of evidence: Ann's turn
  CHECK(x.qa[1].speaker == 1);  // majority: Bob's turn (no name in the question)
  CHECK(x.qa[2].speaker == 0);  // 1-1 tie, both named: speaker_a
  CHECK(x.qa[3].speaker == 1);  // no evidence, only Bob named
  CHECK(x.qa[3].answer.empty());
  CHECK(x.qa[4].speaker == 1);  // 1-1 tie ("D1:3; D1:2"), only Bob named
  CHECK(x.qa[4].answer == "2023");
  CHECK(x.qa[4].evidence.size() == 2);
  const auto& y = d.conversations[1];
  CHECK(y.qa[0].evidence == std::vector<DiaKey>{make_dia_key(1, 2)});  // "D:1:2" fixed, "D" dropped
  CHECK(d.dropped_evidence == 1);
  CHECK(y.qa[0].speaker == 0);
}

TEST_CASE("LoCoMo dates") {
  std::int64_t m = 0;
  REQUIRE(parse_locomo_date("1:56 pm on 8 May, 2023", m));
  // 2023-05-08 is day 19485 since 1970-01-01.
  CHECK(m == (19485LL * 24 + 13) * 60 + 56);
  REQUIRE(parse_locomo_date("12:05 am on 1 January, 1970", m));
  CHECK(m == 5);
  REQUIRE(parse_locomo_date("12:00 pm on 29 Feb, 2024", m));
  CHECK(m % (24 * 60) == 12 * 60);
  CHECK_FALSE(parse_locomo_date("13:00 pm on 1 May, 2023", m));
  CHECK_FALSE(parse_locomo_date("1:00 pm on 1 Mai, 2023", m));
  CHECK_FALSE(parse_locomo_date("1:00 pm on 1 May 2023 extra", m));
}

TEST_CASE("LoCoMo loader errors name the file and the key path") {
  auto error = [](const std::string& json) {
    LocomoData d;
    try {
      load_locomo_json(json, "bad.json", d);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error(R"({"speaker_a": "A", "speaker_b": "B", "qa": [{"question": 3}]})")
            .find("bad.json: qa[0].question: expected a string") != std::string::npos);
  CHECK(error(R"({"speaker_a": "A", "speaker_b": "B", "session_1": [], "qa": [)")
            .find("bad.json:1:") != std::string::npos);
  CHECK(error(R"({"speaker_a": "A", "speaker_b": "B", "session_1_date_time": "soon",
                  "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}], "qa": []})")
            .find("session_1_date_time: expected a date") != std::string::npos);
  CHECK(error(R"({"speaker_a": "A", "speaker_b": "B", "qa": [],
                  "session_1_date_time": "1:00 pm on 1 May, 2023",
                  "session_1_observation": {"C": [["C is here.", "D1:1"]]}})")
            .find("speaker 'C' is neither") != std::string::npos);
  CHECK_THROWS_AS(load_locomo("/nonexistent/locomo"), InputError);
}
