#include "traces/reader.h"

#include <filesystem>
#include <fstream>

#include "tests/catch.h"
#include "traces/error.h"
#include "traces/writer.h"

using namespace inferscale;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("inferscale_test_" + name)).string();
}

std::string write_file(const std::string& name, const std::string& body) {
  const auto p = temp_path(name);
  std::ofstream(p) << body;
  return p;
}

/// Reads the whole file; returns the InputError's where() (or "" when it reads cleanly).
std::string error_where(const std::string& path, std::string* message = nullptr) {
  try {
    TraceReader r(path);
    TraceRecord rec;
    while (r.next(rec)) {
    }
  } catch (const InputError& e) {
    if (message) *message = e.message();
    return e.where();
  }
  return "";
}

const char* kGood =
    R"({"type":"header","version":1,"source":"test"}
{"type":"fact","id":10,"user":1,"tokens":20}
{"type":"memory_write","id":11,"user":1,"tokens":5,"time":100}
{"type":"request","id":1,"user":1,"time":200,"query_tokens":24,"output_tokens":50,"facts":[11,10]}
)";

/// Checks that two readers' current records are the same record, field by field.
void check_same_record(const TraceReader& a, const TraceRecord& ra, const TraceReader& b,
                       const TraceRecord& rb) {
  REQUIRE(ra.kind == rb.kind);
  if (ra.kind == RecordKind::kRequest) {
    CHECK(ra.request.id == rb.request.id);
    CHECK(ra.request.user == rb.request.user);
    CHECK(ra.request.time == rb.request.time);
    CHECK(ra.request.query_tokens == rb.request.query_tokens);
    CHECK(ra.request.output_tokens == rb.request.output_tokens);
    CHECK(ra.request.facts == rb.request.facts);
    CHECK(ra.request.text == rb.request.text);
    CHECK(a.request_fact_indices() == b.request_fact_indices());
  } else {
    CHECK(ra.fact.id == rb.fact.id);
    CHECK(ra.fact.user == rb.fact.user);
    CHECK(ra.fact.tokens == rb.fact.tokens);
    CHECK(ra.fact.time == rb.fact.time);
    CHECK(ra.fact.text == rb.fact.text);
    CHECK(ra.fact.source == rb.fact.source);
    CHECK(ra.fact.session == rb.fact.session);
    CHECK(ra.fact.context_tokens == rb.fact.context_tokens);
  }
}

}  // namespace

TEST_CASE("reader reads a valid trace") {
  const auto p = write_file("good.jsonl", kGood);
  TraceReader r(p);
  TraceRecord rec;
  REQUIRE(r.next(rec));
  CHECK(rec.kind == RecordKind::kHeader);
  REQUIRE(r.next(rec));
  CHECK(rec.kind == RecordKind::kFact);
  CHECK(rec.fact.id == 10);
  REQUIRE(r.next(rec));
  CHECK(rec.kind == RecordKind::kMemoryWrite);
  CHECK(rec.fact.time == 100);
  REQUIRE(r.next(rec));
  CHECK(rec.kind == RecordKind::kRequest);
  CHECK(rec.request.facts == std::vector<FactId>{11, 10});
  CHECK(r.request_fact_indices() == std::vector<std::uint32_t>{1, 0});
  CHECK_FALSE(r.next(rec));
}

TEST_CASE("reader rejects bad input with file:line:column") {
  struct Case {
    const char* name;
    std::string body;
    std::string where_suffix;  // ":line:column"
    const char* message_part;
  };
  const std::string fact = R"({"type":"fact","id":10,"user":1,"tokens":20})"
                           "\n";
  const std::vector<Case> cases = {
      {"truncated", fact + R"({"type":"request","id":1,"user":1,"time":2)", ":2:", "truncated"},
      {"wrong_type", R"({"type":"fact","id":"10","user":1,"tokens":20})", ":1:21",
       "expected an integer, got a string"},
      {"negative_size", R"({"type":"fact","id":10,"user":1,"tokens":-4})", ":1:42",
       "expected an integer in [1"},
      {"backwards",
       fact + R"({"type":"memory_write","id":11,"user":1,"tokens":5,"time":100})"
              "\n"
              R"({"type":"memory_write","id":12,"user":1,"tokens":5,"time":50})",
       ":3:59", "time goes backwards"},
      {"missing_fact",
       fact +
           R"({"type":"request","id":1,"user":1,"time":2,"query_tokens":1,"output_tokens":1,"facts":[10,99]})",
       ":2:91", "does not exist (yet)"},
      {"other_users_fact",
       fact +
           R"({"type":"request","id":1,"user":2,"time":2,"query_tokens":1,"output_tokens":1,"facts":[10]})",
       ":2:88", "of user 1"},
      {"unknown_key", R"({"type":"fact","id":10,"user":1,"tokens":20,"tokns":3})", ":1:53",
       "unknown key 'tokns'"},
      {"duplicate", fact + fact, ":2:21", "duplicate fact id"},
      {"missing_key", R"({"type":"fact","id":10,"tokens":20})", ":1:1", "missing key 'user'"},
  };
  for (const auto& c : cases) {
    SECTION(c.name) {
      const auto p = write_file(std::string(c.name) + ".jsonl", c.body);
      std::string message;
      const auto where = error_where(p, &message);
      INFO(c.name << ": " << where << ": " << message);
      CHECK(where.rfind(p, 0) == 0);
      CHECK(where.find(c.where_suffix) == p.size());
      CHECK(message.find(c.message_part) != std::string::npos);
    }
  }
}

TEST_CASE("a number out of range or with a leading zero is an error at its position") {
  struct Case {
    const char* name;
    std::string body;
    std::string where_suffix;
    const char* message_part;
  };
  const std::vector<Case> cases = {
      // Read as 0 before: within [0, 1000], so it passed the range check.
      {"huge", R"({"type":"header","version":1,"tokens_per_word":1e999})", ":1:48",
       "number out of range"},
      {"huge_negative", R"({"type":"header","version":1,"tokens_per_word":-1e999})", ":1:48",
       "number out of range"},
      // Both the compact fast path and the general parser: JSON has no leading zeros.
      {"leading_zero_id", R"({"type":"fact","id":0268435455,"user":1,"tokens":20})", ":1:21",
       "leading zero"},
      {"leading_zero_fact",
       R"({"type":"fact","id":7,"user":1,"tokens":20})"
       "\n"
       R"({"type":"request","id":1,"user":1,"time":2,"query_tokens":1,"output_tokens":1,"facts":[07]})",
       ":2:88", "leading zero"},
  };
  for (const auto& c : cases) {
    SECTION(c.name) {
      const auto p = write_file(std::string(c.name) + ".jsonl", c.body);
      std::string message;
      const auto where = error_where(p, &message);
      INFO(c.name << ": " << where << ": " << message);
      CHECK(where.rfind(p, 0) == 0);
      CHECK(where.find(c.where_suffix) == p.size());
      CHECK(message.find(c.message_part) != std::string::npos);
    }
  }
}

TEST_CASE("writer -> reader round trip") {
  const auto p = temp_path("roundtrip.jsonl");
  TraceHeader h;
  h.source = "test";
  h.arrival = ArrivalMode::kClosedLoop;
  h.concurrency = 3;
  h.think_time_ns = 7;
  FactRecord f{5, 2, 17, 0, "Caroline has a \"dog\"\n", "D1:3", 1, {4, 5, 6}};
  RequestRecord q;
  q.id = 9;
  q.user = 2;
  q.time = 42;
  q.query_tokens = 12;
  q.output_tokens = 3;
  q.facts = {5};
  q.text = "Who?";
  q.qa = QaInfo{2, "Max", {"D1:3", "D2:1"}};
  {
    TraceWriter w(p);
    w.write(h);
    w.write_fact(f, true);
    w.write(q);
    w.close();
  }
  TraceReader r(p);
  TraceRecord rec;
  REQUIRE(r.next(rec));
  CHECK(rec.header.arrival == ArrivalMode::kClosedLoop);
  CHECK(rec.header.concurrency == 3);
  CHECK(rec.header.think_time_ns == 7);
  REQUIRE(r.next(rec));
  CHECK(rec.kind == RecordKind::kMemoryWrite);
  CHECK(rec.fact.text == f.text);
  CHECK(rec.fact.source == "D1:3");
  CHECK(rec.fact.context_tokens == f.context_tokens);
  REQUIRE(r.next(rec));
  CHECK(rec.request.qa.answer == "Max");
  CHECK(rec.request.qa.evidence == q.qa.evidence);
  CHECK(rec.request.text == "Who?");
  CHECK_FALSE(r.next(rec));
}

TEST_CASE("an unclosed writer leaves nothing behind") {
  const auto p = temp_path("abandoned.jsonl");
  std::filesystem::remove(p);
  {
    TraceWriter w(p);
    w.write(TraceHeader{});
  }
  CHECK_FALSE(std::filesystem::exists(p));
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(p).parent_path())) {
    CHECK(e.path().filename().string().rfind("inferscale_test_abandoned.jsonl", 0) != 0);
  }
}

TEST_CASE("the compact fast path and the general parser read the same records") {
  // The writer's compact lines take the fast path; the same lines with a space after '{' take
  // the general parser. Every field must come out the same.
  const auto compact = temp_path("fast_compact.jsonl");
  {
    TraceWriter w(compact);
    for (FactId id = 0; id < 40; ++id) {
      FactRecord f{id * 3 + 1,
                   id % 4,
                   static_cast<std::uint32_t>(5 + id),
                   0,
                   id % 2 ? "t" : "",
                   id % 3 ? "D1:2" : "",
                   static_cast<std::int32_t>(id % 5) - 1,
                   {}};
      if (id % 2) f.context_tokens = {3, 4, static_cast<std::uint32_t>(id)};
      w.write_fact(f, false);
    }
    FactRecord mw{500, 1, 9, 10, "", "", -1, {}};
    w.write_fact(mw, true);
    for (RequestId id = 0; id < 30; ++id) {
      RequestRecord q;
      q.id = id;
      q.user = id % 4;
      q.time = 20 + static_cast<SimTime>(id);
      q.query_tokens = 7;
      q.output_tokens = 3;
      for (FactId f = q.user; f < 40; f += 4) q.facts.push_back(f * 3 + 1);
      if (id % 5 == 0) q.text = "why?";
      w.write(q);
    }
    w.close();
  }
  std::ifstream in(compact);
  const auto spaced = temp_path("fast_spaced.jsonl");
  std::ofstream out(spaced);
  for (std::string line; std::getline(in, line);) out << "{ " << line.substr(1) << "\n";
  out.close();
  TraceReader a(compact), b(spaced);
  TraceRecord ra, rb;
  std::size_t n = 0;
  while (a.next(ra)) {
    REQUIRE(b.next(rb));
    ++n;
    check_same_record(a, ra, b, rb);
  }
  CHECK_FALSE(b.next(rb));
  CHECK(n == 71);
}

TEST_CASE("FactIndex::find_owned answers as find and owner do, for every id and owner range") {
  FactIndex index;
  struct Added {
    FactId id;
    UserId user;
  };
  const std::vector<Added> added = {
      {0, 0},                               // the smallest
      {5, 7},                               // dense, small owner
      {6, 0xfffffffeull},                   // the largest owner kept in the entry
      {7, 0xffffffffull},                   // owners from 2^32 - 1 on live in owner_
      {8, 0x1234567890ull},                 //
      {FactId{1} << 28, 3},                 // sparse ids (a hash map)
      {(FactId{1} << 40) + 1, 1ull << 35},  // sparse id, wide owner
  };
  for (const auto& a : added) REQUIRE(index.add(a.id, a.user) != FactIndex::kAbsent);
  CHECK(index.add(5, 9) == FactIndex::kAbsent);  // an id exists once
  for (const auto& a : added) {
    INFO("id " << a.id << ", user " << a.user);
    const auto dense = index.find(a.id);
    REQUIRE(dense != FactIndex::kAbsent);
    CHECK(index.owner(dense) == a.user);
    CHECK(index.find_owned(a.id, a.user) == dense);
    // Owners that differ in the low or high 32 bits, or are the entry's wide marker.
    for (const UserId other : {a.user + 1, a.user ^ (UserId{1} << 32), UserId{0xffffffffull},
                               UserId{0}, a.user + (UserId{1} << 32)}) {
      if (other == a.user) continue;
      CHECK(index.find_owned(a.id, other) == FactIndex::kAbsent);
    }
  }
  for (const FactId absent :
       {FactId{1}, FactId{4}, FactId{9}, FactId{1000000}, (FactId{1} << 28) + 1, FactId{1} << 50}) {
    CHECK(index.find(absent) == FactIndex::kAbsent);
    CHECK(index.find_owned(absent, 0) == FactIndex::kAbsent);
    CHECK(index.find_owned(absent, 3) == FactIndex::kAbsent);
  }
}

TEST_CASE("FactIndex keeps a dense table only while ids stay dense") {
  // One fact with the largest dense id: a dense table to it would be 2 GiB.
  FactIndex huge;
  REQUIRE(huge.add((FactId{1} << 28) - 1, 1) == 0);
  REQUIRE(huge.add(7, 2) == 1);
  CHECK(huge.table_bytes() < (std::size_t{16} << 20));
  CHECK(huge.find((FactId{1} << 28) - 1) == 0);
  CHECK(huge.find_owned((FactId{1} << 28) - 1, 1) == 0);
  CHECK(huge.find_owned(7, 2) == 1);
  CHECK(huge.find(8) == FactIndex::kAbsent);
  // An id first kept in the hash map moves to the table once the table reaches it; it is
  // found, and still exists once, either way.
  FactIndex grown;
  const FactId early = 3000000;
  REQUIRE(grown.add(early, 5) == 0);
  for (FactId id = 0; id < early; ++id) REQUIRE(grown.add(id, id % 11) == id + 1);
  CHECK(grown.find(early) == 0);
  CHECK(grown.find_owned(early, 5) == 0);
  CHECK(grown.find_owned(early, 6) == FactIndex::kAbsent);
  CHECK(grown.add(early, 5) == FactIndex::kAbsent);
  CHECK(grown.find(early + 1) == FactIndex::kAbsent);
  for (FactId id = 0; id < early; id += 99991) CHECK(grown.find_owned(id, id % 11) == id + 1);
  CHECK(grown.table_bytes() < early * 64);
}

TEST_CASE("numbers of every length read the same on the fast path and the general parser") {
  // Fact ids and users of 1 to 19 digits in every position of a line (the fast path reads up to
  // 8 digits at a time and must stop at the first non-digit). Leading zeros are errors (below).
  std::vector<std::string> ids, users;
  std::string digits = "1";
  for (int n = 1; n <= 18; ++n) {
    ids.push_back(digits);
    users.push_back(std::to_string(n % 3 == 0 ? (1ull << 33) + n : n));
    digits += static_cast<char>('0' + (n * 7) % 10);
  }
  std::string body;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    body += "{\"type\":\"fact\",\"id\":" + ids[i] + ",\"user\":" + users[i] +
            ",\"tokens\":" + std::to_string(1 + i) + "}\n";
  }
  for (std::size_t i = 0; i < ids.size(); ++i) {
    body += "{\"type\":\"request\",\"id\":" + std::to_string(i) + ",\"user\":" + users[i] +
            ",\"time\":" + std::to_string(1000 * i) + ",\"query_tokens\":" + std::to_string(9 + i) +
            ",\"output_tokens\":2,\"facts\":[" + ids[i] + "," + ids[i] + "]}\n";
  }
  std::string spaced;
  for (std::size_t b = 0, e; (e = body.find('\n', b)) != std::string::npos; b = e + 1) {
    spaced += "{ " + body.substr(b + 1, e - b);
  }
  TraceReader a(write_file("numbers_fast.jsonl", body));
  TraceReader b(write_file("numbers_general.jsonl", spaced));
  TraceRecord ra, rb;
  std::size_t i = 0, requests = 0;
  while (a.next(ra)) {
    REQUIRE(b.next(rb));
    REQUIRE(ra.kind == rb.kind);
    if (ra.kind == RecordKind::kFact) {
      CHECK(ra.fact.id == std::stoull(ids[i]));
      CHECK(ra.fact.id == rb.fact.id);
      CHECK(ra.fact.user == std::stoull(users[i]));
      CHECK(ra.fact.user == rb.fact.user);
      ++i;
    } else if (ra.kind == RecordKind::kRequest) {
      CHECK(ra.request.user == rb.request.user);
      CHECK(ra.request.time == rb.request.time);
      CHECK(ra.request.query_tokens == rb.request.query_tokens);
      CHECK(ra.request.facts == rb.request.facts);
      CHECK(a.request_fact_indices() ==
            std::vector<std::uint32_t>(2, static_cast<std::uint32_t>(requests)));
      ++requests;
    }
  }
  CHECK_FALSE(b.next(rb));
  CHECK(requests == ids.size());
  // Not integers (or not JSON numbers): errors either way, with the column of the number.
  for (const char* bad : {"1.5", "12e3", "1234567.0", "-3", "12345678.5", "007", "00", "0123456789",
                          "01234567890123456789"}) {
    INFO(bad);
    const std::string line =
        "{\"type\":\"fact\",\"id\":1,\"user\":1,\"tokens\":3}\n"
        "{\"type\":\"request\",\"id\":1,\"user\":1,\"time\":0,"
        "\"query_tokens\":3,\"output_tokens\":2,\"facts\":[" +
        std::string(bad) + ",1]}\n";
    TraceReader r(write_file("numbers_bad.jsonl", line));
    TraceRecord rec;
    REQUIRE(r.next(rec));
    CHECK_THROWS_AS(r.next(rec), InputError);
  }
}

TEST_CASE("lines in the writer's key order, in other orders and with more keys read alike") {
  // The fast path reads the writer's leading keys as fixed text, then any keys after them in a
  // loop; a line that starts otherwise, or leaves the writer's order partway, is read by that
  // loop from its start. The same lines with a space after '{' take the general parser.
  const std::string body =
      "{\"type\":\"fact\",\"id\":1,\"user\":1,\"tokens\":3,\"time\":0,\"session\":2}\n"
      "{\"id\":2,\"type\":\"fact\",\"user\":1,\"tokens\":4}\n"
      "{\"type\":\"fact\",\"id\":3,\"user\":1,\"time\":0,\"tokens\":5}\n"
      "{\"type\":\"fact\",\"id\":4,\"user\":2,\"tokens\":6}\n"
      "{\"type\":\"fact\",\"id\":5,\"user\":1,\"tokens\":7,\"time\":0,\"source\":\"D1:3\","
      "\"context_tokens\":[1,2],\"text\":\"x\"}\n"
      "{\"type\":\"memory_write\",\"id\":6,\"user\":1,\"tokens\":8,\"time\":5}\n"
      "{\"type\":\"request\",\"id\":0,\"user\":1,\"time\":6,\"query_tokens\":3,"
      "\"output_tokens\":2,\"facts\":[1,2,3],\"text\":\"why?\"}\n"
      "{\"type\":\"request\",\"id\":1,\"user\":1,\"time\":6,\"facts\":[5,1],\"query_tokens\":4,"
      "\"output_tokens\":2}\n"
      "{\"user\":1,\"type\":\"request\",\"id\":2,\"time\":7,\"query_tokens\":5,"
      "\"output_tokens\":3,\"facts\":[6,5,3,2,1]}\n"
      "{\"type\":\"request\",\"id\":3,\"user\":2,\"time\":8,\"query_tokens\":6,"
      "\"output_tokens\":4,\"facts\":[]}\n"
      "{\"type\":\"request\",\"id\":4,\"user\":2,\"time\":9,\"query_tokens\":6,"
      "\"output_tokens\":4,\"facts\":[4,4]}\n";
  std::string spaced;
  for (std::size_t b = 0, e; (e = body.find('\n', b)) != std::string::npos; b = e + 1) {
    spaced += "{ " + body.substr(b + 1, e - b);
  }
  TraceReader a(write_file("orders_fast.jsonl", body));
  TraceReader b(write_file("orders_general.jsonl", spaced));
  TraceRecord ra, rb;
  std::size_t facts = 0, writes = 0, requests = 0;
  while (a.next(ra)) {
    REQUIRE(b.next(rb));
    check_same_record(a, ra, b, rb);
    if (ra.kind == RecordKind::kRequest) {
      ++requests;
    } else {
      (ra.kind == RecordKind::kMemoryWrite ? writes : facts) += 1;
    }
  }
  CHECK_FALSE(b.next(rb));
  CHECK(facts == 5);
  CHECK(writes == 1);
  CHECK(requests == 5);
}
