// The binary trace format: an exact round trip with JSONL, the JSONL reader's checks with the
// record number as the position, and damaged files rejected.
#include "traces/binary_trace.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "tests/catch.h"
#include "traces/error.h"
#include "traces/synthetic.h"
#include "traces/writer.h"

using namespace inferscale;
namespace fs = std::filesystem;

namespace {

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("inferscale_bin_" + name)).string();
}

std::string read_bytes(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

/// Every record of `path` through open_trace; InputError's where and message on failure.
std::vector<TraceRecord> read_all(const std::string& path, std::string* where = nullptr,
                                  std::string* message = nullptr) {
  std::vector<TraceRecord> out;
  try {
    auto s = open_trace(path);
    TraceRecord rec;
    while (s->next(rec)) out.push_back(rec);
  } catch (const InputError& e) {
    if (where) *where = e.where();
    if (message) *message = e.message();
  }
  return out;
}

void check_same(const TraceRecord& a, const TraceRecord& b) {
  REQUIRE(a.kind == b.kind);
  if (a.kind == RecordKind::kHeader) {
    CHECK(a.header.version == b.header.version);
    CHECK(a.header.source == b.header.source);
    CHECK(a.header.arrival == b.header.arrival);
    CHECK(a.header.concurrency == b.header.concurrency);
    CHECK(a.header.think_time_ns == b.header.think_time_ns);
    CHECK(a.header.tokens_per_word == b.header.tokens_per_word);
    CHECK(a.header.k == b.header.k);
    CHECK(a.header.description == b.header.description);
  } else if (a.kind == RecordKind::kRequest) {
    CHECK(a.request.id == b.request.id);
    CHECK(a.request.user == b.request.user);
    CHECK(a.request.time == b.request.time);
    CHECK(a.request.query_tokens == b.request.query_tokens);
    CHECK(a.request.output_tokens == b.request.output_tokens);
    CHECK(a.request.facts == b.request.facts);
    CHECK(a.request.text == b.request.text);
    CHECK(a.request.qa.category == b.request.qa.category);
    CHECK(a.request.qa.answer == b.request.qa.answer);
    CHECK(a.request.qa.evidence == b.request.qa.evidence);
  } else {
    CHECK(a.fact.id == b.fact.id);
    CHECK(a.fact.user == b.fact.user);
    CHECK(a.fact.tokens == b.fact.tokens);
    CHECK(a.fact.time == b.fact.time);
    CHECK(a.fact.text == b.fact.text);
    CHECK(a.fact.source == b.fact.source);
    CHECK(a.fact.session == b.fact.session);
    CHECK(a.fact.context_tokens == b.fact.context_tokens);
  }
}

/// A binary file written record by record with no checks (the writer trusts its caller).
std::string raw_binary(const std::string& name, const std::function<void(BinaryTraceWriter&)>& f) {
  const auto p = temp_path(name + ".bin");
  BinaryTraceWriter w(p);
  f(w);
  w.close();
  return p;
}

FactRecord fact(FactId id, UserId user, std::uint32_t tokens, SimTime time = 0) {
  FactRecord f;
  f.id = id;
  f.user = user;
  f.tokens = tokens;
  f.time = time;
  return f;
}

RequestRecord request(RequestId id, UserId user, SimTime time, std::vector<FactId> facts) {
  RequestRecord r;
  r.id = id;
  r.user = user;
  r.time = time;
  r.query_tokens = 3;
  r.output_tokens = 2;
  r.facts = std::move(facts);
  return r;
}

}  // namespace

TEST_CASE("JSONL -> binary -> JSONL is exact") {
  SyntheticOptions o;
  o.users = 200;
  o.requests = 3000;
  o.live_sessions = 2;
  o.context_turns = 3;
  o.seed = 5;
  const auto jsonl = temp_path("rt.jsonl"), bin = temp_path("rt.bin"), back = temp_path("rt2.jsonl");
  {
    TraceWriter w(jsonl);
    generate_synthetic(o, w);
    w.close();
  }
  CHECK(convert_trace(jsonl, bin).to_binary);
  CHECK(is_binary_trace(bin));
  CHECK(fs::file_size(bin) * 4 < fs::file_size(jsonl));
  const ConvertResult r = convert_trace(bin, back);
  CHECK_FALSE(r.to_binary);
  CHECK(read_bytes(back) == read_bytes(jsonl));
  // The same records and dense indices through both readers.
  auto a = open_trace(jsonl), b = open_trace(bin);
  TraceRecord ra, rb;
  std::uint64_t n = 0;
  while (a->next(ra)) {
    REQUIRE(b->next(rb));
    check_same(ra, rb);
    if (ra.kind == RecordKind::kRequest) {
      CHECK(a->request_fact_indices() == b->request_fact_indices());
    }
    ++n;
  }
  CHECK_FALSE(b->next(rb));
  CHECK(n == r.records);
  CHECK(a->facts_declared() == b->facts_declared());
}

TEST_CASE("every optional field survives the binary format") {
  // The hand-written sample has text, sources, sessions and QA items.
  const std::string sample = std::string(INFERSCALE_SOURCE_DIR) + "/traces/samples/tiny.jsonl";
  const auto bin = temp_path("tiny.bin");
  convert_trace(sample, bin);
  const auto a = read_all(sample), b = read_all(bin);
  REQUIRE(a.size() == b.size());
  REQUIRE(a.size() > 5);
  for (std::size_t i = 0; i < a.size(); ++i) check_same(a[i], b[i]);
  // A closed-loop header with every field.
  TraceHeader h;
  h.source = "x";
  h.arrival = ArrivalMode::kClosedLoop;
  h.concurrency = 3;
  h.think_time_ns = 7;
  h.tokens_per_word = 1.37;
  h.k = 9;
  h.description = "d";
  const auto p = raw_binary("header", [&](BinaryTraceWriter& w) { w.write(h); });
  const auto recs = read_all(p);
  REQUIRE(recs.size() == 1);
  TraceRecord expected;
  expected.kind = RecordKind::kHeader;
  expected.header = h;
  check_same(recs[0], expected);
}

TEST_CASE("the binary reader rejects what the JSONL reader rejects, at the record number") {
  struct Case {
    const char* name;
    std::function<void(BinaryTraceWriter&)> write;
    std::uint64_t record;
    const char* message_part;
  };
  const std::vector<Case> cases = {
      {"zero_tokens", [](BinaryTraceWriter& w) { w.write_fact(fact(10, 1, 0), false); }, 1,
       "expected an integer in [1"},
      {"huge_tokens",
       [](BinaryTraceWriter& w) {
         w.write_fact(fact(10, 1, 5), false);
         w.write_fact(fact(11, 1, (1u << 24) + 1), false);
       },
       2, "expected an integer in [1"},
      {"backwards",
       [](BinaryTraceWriter& w) {
         w.write_fact(fact(10, 1, 5), false);
         w.write_fact(fact(11, 1, 5, 100), true);
         w.write_fact(fact(12, 1, 5, 50), true);
       },
       3, "time goes backwards"},
      {"missing_fact",
       [](BinaryTraceWriter& w) {
         w.write_fact(fact(10, 1, 5), false);
         w.write(request(1, 1, 2, {10, 99}));
       },
       2, "does not exist (yet)"},
      {"other_users_fact",
       [](BinaryTraceWriter& w) {
         w.write_fact(fact(10, 1, 5), false);
         w.write(request(1, 2, 2, {10}));
       },
       2, "of user 1"},
      {"duplicate",
       [](BinaryTraceWriter& w) {
         w.write_fact(fact(10, 1, 5), false);
         w.write_fact(fact(10, 1, 5), false);
       },
       2, "duplicate fact id"},
      {"late_header",
       [](BinaryTraceWriter& w) {
         w.write_fact(fact(10, 1, 5), false);
         w.write(TraceHeader{});
       },
       2, "must be the first"},
      {"closed_loop_without_concurrency",
       [](BinaryTraceWriter& w) {
         TraceHeader h;
         h.arrival = ArrivalMode::kClosedLoop;
         w.write(h);
       },
       1, "needs 'concurrency'"},
      {"zero_query_tokens",
       [](BinaryTraceWriter& w) {
         w.write_fact(fact(10, 1, 5), false);
         auto r = request(1, 1, 2, {10});
         r.query_tokens = 0;
         w.write(r);
       },
       2, "key 'query_tokens'"},
      {"bad_category",
       [](BinaryTraceWriter& w) {
         w.write_fact(fact(10, 1, 5), false);
         auto r = request(1, 1, 2, {10});
         r.qa.category = 7;
         w.write(r);
       },
       2, "key 'qa.category'"},
  };
  for (const auto& c : cases) {
    SECTION(c.name) {
      const auto p = raw_binary(c.name, c.write);
      std::string where, message;
      read_all(p, &where, &message);
      INFO(c.name << ": " << where << ": " << message);
      CHECK(where == p + ": record " + std::to_string(c.record));
      CHECK(message.find(c.message_part) != std::string::npos);
    }
  }
}

TEST_CASE("damaged binary traces are rejected, not read short") {
  SyntheticOptions o;
  o.users = 50;
  o.requests = 500;
  const auto jsonl = temp_path("dmg.jsonl"), bin = temp_path("dmg.bin");
  {
    TraceWriter w(jsonl);
    generate_synthetic(o, w);
    w.close();
  }
  convert_trace(jsonl, bin);
  const std::string bytes = read_bytes(bin);
  const auto damaged = [&](const std::string& name, const std::string& body) {
    const auto p = temp_path(name);
    std::ofstream(p, std::ios::binary) << body;
    std::string where, message;
    read_all(p, &where, &message);
    INFO(name << ": " << where << ": " << message);
    CHECK(where.rfind(p + ": record ", 0) == 0);
    return message;
  };
  SECTION("truncated") {
    CHECK_FALSE(damaged("cut.bin", bytes.substr(0, bytes.size() / 2)).empty());
  }
  SECTION("cut before the end mark") {
    // Recompressed without the end mark: a clean zstd stream that stops early.
    const auto p = raw_binary("noend", [](BinaryTraceWriter& w) {
      w.write_fact(fact(1, 1, 5), false);
    });
    std::string b = read_bytes(p);
    CHECK_FALSE(damaged("short.bin", b.substr(0, b.size() - 1)).empty());
  }
  SECTION("a flipped byte") {
    std::string b = bytes;
    b[b.size() / 2] = static_cast<char>(b[b.size() / 2] ^ 0x5a);
    CHECK_FALSE(damaged("flip.bin", b).empty());
  }
  SECTION("data after the end") {
    CHECK_FALSE(damaged("twice.bin", bytes + bytes.substr(kBinaryTraceMagic.size())).empty());
  }
}

TEST_CASE("convert leaves nothing behind on bad input") {
  const auto bad = temp_path("bad.jsonl"), out = temp_path("bad.bin");
  std::ofstream(bad) << R"({"type":"fact","id":10,"user":1,"tokens":0})" << "\n";
  fs::remove(out);
  CHECK_THROWS_AS(convert_trace(bad, out), InputError);
  CHECK_FALSE(fs::exists(out));
  CHECK_FALSE(fs::exists(out + ".tmp"));
}

namespace {

/// The names in `dir`, sorted.
std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<FactId> fact_ids(const std::string& path) {
  std::vector<FactId> ids;
  for (const auto& r : read_all(path)) ids.push_back(r.fact.id);
  return ids;
}

}  // namespace

TEST_CASE("two binary writers of one trace write apart, and a dropped one leaves nothing") {
  // Before: every writer wrote `<path>.tmp`; the second truncated the first's file, the first
  // close() renamed a mix of both and the second close() threw filesystem_error.
  const fs::path dir = temp_path("writers_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string out = (dir / "t.bin").string();
  {
    BinaryTraceWriter a(out), b(out);
    const auto tmp = names_in(dir);
    REQUIRE(tmp.size() == 2);  // one temporary file each, beside the target
    for (const auto& n : tmp) CHECK((n.rfind("t.bin.", 0) == 0 && n.ends_with(".tmp")));
    a.write_fact(fact(1, 1, 5), false);
    a.write_fact(fact(2, 1, 6), false);
    b.write_fact(fact(7, 2, 9), false);
    a.close();
    CHECK(fact_ids(out) == std::vector<FactId>{1, 2});
    b.close();  // the later one replaces it, whole
    CHECK(fact_ids(out) == std::vector<FactId>{7});
  }
  CHECK(names_in(dir) == std::vector<std::string>{"t.bin"});
  {
    BinaryTraceWriter dropped((dir / "dropped.bin").string());
    dropped.write_fact(fact(3, 1, 5), false);
    CHECK(names_in(dir).size() == 2);
  }  // destroyed without close()
  CHECK(names_in(dir) == std::vector<std::string>{"t.bin"});
  fs::remove_all(dir);
}

TEST_CASE("generation and conversion tell their progress: rising, then the whole at the end") {
  SyntheticOptions o;
  o.users = 1500;  // about 190,000 fact records: several reports
  o.requests = 2000;
  o.seed = 9;
  struct Told {
    double fraction;
    std::uint64_t records;
  };
  auto check_told = [](const std::vector<Told>& told, std::uint64_t records) {
    REQUIRE(told.size() >= 3);
    for (std::size_t i = 1; i < told.size(); ++i) {
      CHECK(told[i].records > told[i - 1].records);
      CHECK(told[i].fraction >= told[i - 1].fraction);
    }
    CHECK(told.front().records == 65536);
    CHECK(told.front().fraction > 0);
    CHECK(told.front().fraction < 1);
    CHECK(told.back().fraction == 1.0);
    CHECK(told.back().records == records);
  };
  const auto jsonl = temp_path("progress.jsonl"), bin = temp_path("progress.bin");
  std::vector<Told> generated;
  SyntheticResult g;
  {
    TraceWriter w(jsonl);
    g = generate_synthetic(o, w, [&](double f, std::uint64_t n) { generated.push_back({f, n}); });
    w.close();
  }
  const std::uint64_t records = 1 + g.facts + g.memory_writes + g.requests;  // and the header
  check_told(generated, records);
  std::vector<Told> converted;
  const ConvertResult r = convert_trace(jsonl, bin, [&](double f, std::uint64_t n) {
    converted.push_back({f, n});
  });
  CHECK(r.records == records);
  check_told(converted, records);
  fs::remove(jsonl);
  fs::remove(bin);
}
