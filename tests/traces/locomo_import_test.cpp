// The LoCoMo importer: population rules, times, retrieval candidates and options.
#include "traces/locomo_import.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "tests/catch.h"
#include "tests/traces/locomo_fixture.h"
#include "traces/error.h"
#include "traces/reader.h"
#include "traces/stats.h"

using namespace inferscale;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("inferscale_test_" + name)).string();
}

struct Trace {
  std::vector<TraceRecord> records;
  std::vector<FactRecord> writes;
  std::vector<RequestRecord> requests;
};

Trace read_all(const std::string& path) {
  Trace t;
  TraceReader r(path);
  TraceRecord rec;
  while (r.next(rec)) {
    t.records.push_back(rec);
    if (rec.kind == RecordKind::kMemoryWrite) t.writes.push_back(rec.fact);
    if (rec.kind == RecordKind::kRequest) t.requests.push_back(rec.request);
  }
  return t;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Trace import(const LocomoData& d, const LocomoImportOptions& o, const std::string& name,
             LocomoImportResult* result = nullptr) {
  const auto p = temp_path(name);
  TraceWriter w(p);
  const auto r = import_locomo(d, o, w);
  w.close();
  if (result) *result = r;
  return read_all(p);
}

LocomoData two() {
  LocomoData d;
  load_locomo_json(test::kTwoConversations, "two.json", d);
  return d;
}

std::string where(const LocomoImportOptions& o) {
  try {
    validate_locomo_options(o);
  } catch (const InputError& e) {
    return e.where();
  }
  return "";
}

}  // namespace

TEST_CASE("user i replays conversation i % C, speaker (i / C) % 2, replica i / 2C") {
  CHECK(locomo_user(0, 10).conversation == 0);
  CHECK(locomo_user(9, 10).conversation == 9);
  CHECK(locomo_user(9, 10).speaker == 0);
  CHECK(locomo_user(10, 10).conversation == 0);
  CHECK(locomo_user(10, 10).speaker == 1);
  CHECK(locomo_user(19, 10).replica == 0);
  CHECK(locomo_user(20, 10).replica == 1);
  CHECK(locomo_user(20, 10).speaker == 0);
  CHECK(locomo_user(35, 10).conversation == 5);
  CHECK(locomo_user(35, 10).speaker == 1);
}

TEST_CASE("importer: users, fact copies, questions and BM25 candidates") {
  const auto d = two();
  LocomoImportOptions o;
  o.users = 5;  // X/Ann, Y/Cid, X/Bob, Y/Dee, X/Ann again
  o.arrival.mode = ArrivalMode::kClosedLoop;
  o.max_context_turns = 2;
  LocomoImportResult res;
  const auto t = import(d, o, "import_users.jsonl", &res);
  CHECK(res.users_without_questions == 1);  // Dee is asked nothing
  REQUIRE(t.records.front().kind == RecordKind::kHeader);
  CHECK(t.records.front().header.concurrency == 5);
  CHECK(t.records.front().header.k == 50);
  // Fact ids are dense, user by user; user 4 has its own copies of Ann's facts.
  std::map<UserId, std::vector<FactId>> facts;
  for (const auto& f : t.writes) facts[f.user].push_back(f.id);
  CHECK(facts[0] == std::vector<FactId>{0, 1, 2});
  CHECK(facts[1] == std::vector<FactId>{3});
  CHECK(facts[2] == std::vector<FactId>{4, 5});
  CHECK(facts[3] == std::vector<FactId>{6});
  CHECK(facts[4] == std::vector<FactId>{7, 8, 9});
  // "Ann will visit Bob in Paris." (D2:2, D2:1): context = the 2 turns before D2:2, nearest
  // first: "Bob: I moved to Paris!" (5 words -> 6.5 -> 7 tokens), "Ann: I drink green tea." (7).
  CHECK(t.writes[2].source == "D2:2,D2:1");
  CHECK(t.writes[2].context_tokens == std::vector<std::uint32_t>{7, 7});
  CHECK(t.writes[0].tokens == 8);  // 6 words * 1.3 = 7.8
  CHECK(t.writes[0].context_tokens.empty());
  // Closed loop: round-robin over users, each in file order, all at the start time.
  REQUIRE(t.requests.size() == 8);
  std::vector<UserId> order;
  for (const auto& r : t.requests) order.push_back(r.user);
  CHECK(order == std::vector<UserId>{0, 1, 2, 4, 0, 2, 4, 2});
  CHECK(t.requests[0].text == "What pet does Ann have?");
  CHECK(t.requests[0].facts.back() == 0);  // "Ann has a cat named Tom." ranks first: best last
  CHECK(t.requests[0].facts.size() == 3);
  CHECK(t.requests[3].facts.back() == 7);  // the replica's own copy
  CHECK(t.requests[7].qa.category == 4);
  CHECK(t.requests[7].qa.answer == "2023");
  CHECK(t.requests[7].qa.evidence == std::vector<std::string>{"D1:3", "D1:2"});
  CHECK(t.requests[5].qa.category == 5);
}

TEST_CASE("importer: session dates place memory writes, later facts are no candidates") {
  const auto d = two();
  LocomoImportOptions o;
  o.users = 3;
  o.history_span_s = 100;
  o.start_s = 0;
  o.arrival.mode = ArrivalMode::kClosedLoop;
  const auto t = import(d, o, "import_span.jsonl");
  // X's sessions are 10 days apart: session 2 lands at 100 s. Y has one date: 0.
  for (const auto& f : t.writes) CHECK(f.time == (f.session == 2 ? 100 * kNsPerS : 0));
  // Time order: session-1 writes, then the requests at 0, then session-2 writes.
  std::vector<RecordKind> kinds;
  for (const auto& r : t.records) kinds.push_back(r.kind);
  REQUIRE(kinds.size() == 13);  // header, 4 writes at 0, 6 requests at 0, 2 writes at 100 s
  CHECK(kinds[4] == RecordKind::kMemoryWrite);
  CHECK(kinds[5] == RecordKind::kRequest);
  CHECK(kinds[10] == RecordKind::kRequest);
  CHECK(kinds[11] == RecordKind::kMemoryWrite);
  CHECK(kinds[12] == RecordKind::kMemoryWrite);
  // Bob asks "Where did he move?" at 0 s: only his session-1 fact (id 4) exists then.
  bool seen = false;
  for (const auto& r : t.requests) {
    if (r.user == 2 && r.text == "Where did he move?") {
      CHECK(r.facts == std::vector<FactId>{4});
      seen = true;
    }
  }
  CHECK(seen);
  // By default requests start after the history, when every fact exists.
  o.start_s = -1;
  const auto after = import(d, o, "import_span_after.jsonl");
  for (const auto& r : after.requests) {
    CHECK(r.time == 100 * kNsPerS);
    if (r.user == 2) CHECK(r.facts.size() == 2);
  }
}

TEST_CASE("importer: questions per user, categories, seeds and open-loop arrivals") {
  const auto d = two();
  LocomoImportOptions o;
  o.users = 2;
  o.questions_per_user = 3;  // user 0 has 2 questions: one repeats
  o.arrival.rate_per_s = 2;
  const auto t = import(d, o, "import_q.jsonl");
  std::multiset<std::string> asked;
  SimTime last = 0;
  for (const auto& r : t.requests) {
    if (r.user == 0) asked.insert(r.text);
    CHECK(r.time > last);
    last = r.time;
  }
  CHECK(asked.size() == 3);
  CHECK(asked.count("What pet does Ann have?") + asked.count("Did Ann and Bob meet?") == 3);
  CHECK(asked.count("What pet does Ann have?") >= 1);
  CHECK(asked.count("Did Ann and Bob meet?") >= 1);
  CHECK(t.requests.size() == 6);

  const auto same = temp_path("import_q.jsonl");
  const auto again = temp_path("import_q_again.jsonl");
  {
    TraceWriter w(again);
    import_locomo(d, o, w);
    w.close();
  }
  CHECK(slurp(same) == slurp(again));
  o.seed = 2;
  {
    TraceWriter w(again);
    import_locomo(d, o, w);
    w.close();
  }
  CHECK(slurp(same) != slurp(again));

  LocomoImportOptions c;
  c.users = 4;
  c.categories = {1};
  const auto only1 = import(d, c, "import_cat.jsonl");
  REQUIRE(only1.requests.size() == 2);  // Ann's "What pet" and Cid's question
  for (const auto& r : only1.requests) CHECK(r.qa.category == 1);
}

TEST_CASE("importer options are validated with the option's name") {
  LocomoImportOptions o;
  CHECK(where(o).empty());
  o.users = 0;
  CHECK(where(o) == "--users");
  o = {};
  o.categories = {1, 6};
  CHECK(where(o) == "--categories");
  o = {};
  o.arrival.rate_per_s = 0;
  CHECK(where(o) == "--rate");
  o = {};
  o.tokens_per_word = -1;
  CHECK(where(o) == "--tokens-per-word");
  o = {};
  o.k = 0;
  CHECK(where(o) == "--k");
}

TEST_CASE("importer on LoCoMo: N=20 reproduces the 20 speakers and recall is sane") {
  std::string why;
  const std::string dir = test::real_locomo(why);
  INFO(why);
  REQUIRE(!dir.empty());
  const auto d = load_locomo(dir);
  LocomoImportOptions o;
  const auto p = temp_path("locomo20.jsonl");
  {
    TraceWriter w(p);
    const auto r = import_locomo(d, o, w);
    w.close();
    CHECK(r.facts == 2541);
    CHECK(r.requests == 1986);
  }
  const auto s = trace_stats(p);
  CHECK(s.users == 20);
  CHECK(s.memory_writes == 2541);
  CHECK(s.requests == 1986);
  CHECK(s.k.max == 50);
  REQUIRE(s.has_recall);
  CHECK(s.recall.questions == 1536);  // 1540 answerable, 4 of them without evidence
  REQUIRE(s.recall.recall.size() == 4);
  CHECK(s.recall.recall[0] > 0.2);
  for (std::size_t i = 1; i < 4; ++i) CHECK(s.recall.recall[i] >= s.recall.recall[i - 1]);
  CHECK(s.recall.recall[3] <= s.recall.ceiling);
  CHECK(s.recall.ceiling < 1.0);  // some evidence is the other speaker's turn

  // 40 users: two replicas of every speaker, with their own fact ids.
  o.users = 40;
  o.questions_per_user = 5;
  const auto p40 = temp_path("locomo40.jsonl");
  {
    TraceWriter w(p40);
    const auto r = import_locomo(d, o, w);
    w.close();
    CHECK(r.facts == 2 * 2541);
    CHECK(r.requests == 200);
  }
  const auto s40 = trace_stats(p40);
  CHECK(s40.facts_per_user.min == s.facts_per_user.min);
  CHECK(s40.facts_per_user.max == s.facts_per_user.max);
}
