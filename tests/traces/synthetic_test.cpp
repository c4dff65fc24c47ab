#include "traces/synthetic.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "tests/catch.h"
#include "traces/error.h"
#include "traces/reader.h"
#include "traces/stats.h"

using namespace inferscale;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("inferscale_test_" + name)).string();
}

std::string generate(const SyntheticOptions& o, const std::string& name) {
  const auto p = temp_path(name);
  TraceWriter w(p);
  generate_synthetic(o, w);
  w.close();
  return p;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

SyntheticOptions small() {
  SyntheticOptions o;
  o.users = 200;
  o.requests = 3000;
  o.live_sessions = 2;
  o.context_turns = 3;
  return o;
}

}  // namespace

TEST_CASE("generator is deterministic: same seed, same bytes, other seed, other bytes") {
  auto o = small();
  const auto a = slurp(generate(o, "syn_a.jsonl"));
  const auto b = slurp(generate(o, "syn_b.jsonl"));
  CHECK(a.size() > 100000);
  CHECK(a == b);
  o.seed = 2;
  const auto c = slurp(generate(o, "syn_c.jsonl"));
  CHECK(a != c);
}

TEST_CASE("generator writes a valid trace with the requested shape") {
  const auto o = small();
  const auto p = generate(o, "syn_valid.jsonl");
  TraceReader r(p);  // validates time order, fact ownership and declaration before use
  TraceRecord rec;
  std::uint64_t facts = 0, writes = 0, requests = 0;
  bool saw_write_after_request = false;
  while (r.next(rec)) {
    switch (rec.kind) {
      case RecordKind::kHeader:
        CHECK(rec.header.source == "synthetic");
        break;
      case RecordKind::kFact:
        ++facts;
        CHECK(rec.fact.time == 0);
        CHECK(rec.fact.context_tokens.size() <= 3);
        break;
      case RecordKind::kMemoryWrite:
        ++writes;
        saw_write_after_request = saw_write_after_request || requests > 0;
        break;
      case RecordKind::kRequest: {
        ++requests;
        const auto& f = rec.request.facts;
        CHECK(f.size() == 50);
        CHECK(std::set<FactId>(f.begin(), f.end()).size() == f.size());  // distinct
        CHECK(rec.request.query_tokens >= 1);
        break;
      }
    }
  }
  CHECK(requests == o.requests);
  CHECK(writes > 0);
  CHECK(saw_write_after_request);
  const auto s = trace_stats(p);
  CHECK(s.users == o.users);
  CHECK(s.facts + s.memory_writes == facts + writes);
  CHECK(s.facts_per_user.min >= 82);
  CHECK(s.facts_per_user.max <= 172);
  CHECK(s.facts_per_user.mean == Approx(127).margin(6));
  CHECK(s.fact_tokens.mean == Approx(14.8 * 1.3).margin(1));
  CHECK(s.arrival_rate_per_s == Approx(100).margin(10));
  CHECK(s.context_turns.max == 3);
}

TEST_CASE("generator popularity: Zipf over users concentrates requests") {
  auto o = small();
  o.live_sessions = 0;
  o.user_zipf = 0;
  const auto uniform = trace_stats(generate(o, "syn_uniform.jsonl"));
  o.user_zipf = 1.2;
  const auto skewed = trace_stats(generate(o, "syn_skewed.jsonl"));
  // 3000 requests over 200 users: ~15 each when uniform; the top user gets far more when skewed.
  CHECK(uniform.requests_per_user.max < 50);
  CHECK(skewed.requests_per_user.max > 300);
}

TEST_CASE("generator options are validated with the option's name") {
  auto where = [](const SyntheticOptions& o) {
    try {
      validate_synthetic_options(o);
    } catch (const InputError& e) {
      return e.where();
    }
    return std::string();
  };
  SyntheticOptions o;
  CHECK(where(o).empty());
  o.users = 0;
  CHECK(where(o) == "--users");
  o = {};
  o.live_sessions = o.sessions_min;
  CHECK(where(o) == "--live-sessions");
  o = {};
  o.live_sessions = 1;
  o.arrival.mode = ArrivalMode::kClosedLoop;
  CHECK(where(o) == "--live-sessions");
  o = {};
  o.sessions_max = o.sessions_min - 1;
  CHECK(where(o) == "--sessions-max");
  o = {};
  o.fact_zipf = -1;
  CHECK(where(o) == "--fact-zipf");
}

TEST_CASE("a stream that keeps some users generates only theirs, with the same draws") {
  const auto o = small();  // live sessions: memory writes too
  const auto kept = [](std::uint64_t user) { return user % 3 == 1; };
  for (const bool lazy : {false, true}) {
    CAPTURE(lazy);
    SyntheticStream full(o, lazy);
    SyntheticStream part(o, lazy, kept);
    // The full stream's records of kept users, and every request (others' without facts).
    std::vector<TraceRecord> want;
    std::vector<std::vector<FactId>> want_facts;  // the kept requests' facts, by dense index
    std::vector<FactId> full_dense;               // dense index -> fact id, full stream
    std::vector<std::uint64_t> want_position;     // in the full stream
    TraceRecord rec;
    for (std::uint64_t position = 0; full.next(rec); ++position) {
      if (rec.kind != RecordKind::kHeader &&
          (rec.kind == RecordKind::kRequest || kept(rec.fact.user))) {
        want_position.push_back(position);
      }
      if (rec.kind == RecordKind::kFact || rec.kind == RecordKind::kMemoryWrite) {
        full_dense.push_back(rec.fact.id);
        if (kept(rec.fact.user)) want.push_back(rec);
      } else if (rec.kind == RecordKind::kRequest) {
        if (!kept(rec.request.user)) rec.request.facts.clear();
        std::vector<FactId> ids;
        if (kept(rec.request.user)) {
          for (const auto d : full.request_fact_indices()) ids.push_back(full_dense.at(d));
        }
        want_facts.push_back(ids);
        want.push_back(rec);
      }
    }
    std::vector<FactId> part_dense;
    std::size_t i = 0, requests = 0;
    std::uint64_t others_facts = 0;
    for (std::uint64_t returned = 0; part.next(rec); ++returned) {
      if (rec.kind == RecordKind::kHeader) continue;
      REQUIRE(i < want.size());
      CHECK(returned + part.records_omitted() == want_position[i]);
      const TraceRecord& w = want[i++];
      REQUIRE(rec.kind == w.kind);
      if (rec.kind == RecordKind::kRequest) {
        CHECK(rec.request.time == w.request.time);
        CHECK(rec.request.id == w.request.id);
        CHECK(rec.request.user == w.request.user);
        CHECK(rec.request.query_tokens == w.request.query_tokens);
        CHECK(rec.request.facts == w.request.facts);
        std::vector<FactId> ids;
        for (const auto d : part.request_fact_indices()) ids.push_back(part_dense.at(d));
        CHECK(ids == want_facts[requests++]);
      } else {
        others_facts += kept(rec.fact.user) ? 0 : 1;
        CHECK(rec.fact.id == w.fact.id);
        CHECK(rec.fact.time == w.fact.time);
        CHECK(rec.fact.tokens == w.fact.tokens);
        part_dense.push_back(rec.fact.id);
      }
    }
    CHECK(i == want.size());
    CHECK(others_facts == 0);
    CHECK(part.facts_declared() == part_dense.size());
    CHECK(part.facts_declared() < full.facts_declared() / 2);
  }
}

TEST_CASE("a stream that declares some users at the start: theirs first, the others' when asked") {
  const auto o = small();  // live sessions: memory writes too
  const auto at_start = [](std::uint64_t user) { return user % 4 == 0; };
  const std::uint64_t first = 40;
  SyntheticStream eager(o, false), lazy(o, true), mixed(o, true);
  mixed.declare_at_start(at_start, first);
  TraceRecord rec;
  // What the eager stream declares at t=0 for the chosen users, in its order.
  std::vector<TraceRecord> start;
  while (eager.next(rec) && rec.kind != RecordKind::kRequest) {
    if (rec.kind == RecordKind::kFact && rec.fact.user >= first && at_start(rec.fact.user)) {
      start.push_back(rec);
    }
  }
  REQUIRE(!start.empty());
  CHECK(mixed.start_records() == UINT64_MAX);  // not known yet
  REQUIRE(mixed.next(rec));
  CHECK(rec.kind == RecordKind::kHeader);
  for (const TraceRecord& want : start) {
    REQUIRE(mixed.next(rec));
    REQUIRE(rec.kind == RecordKind::kFact);
    CHECK(rec.fact.id == want.fact.id);
    CHECK(rec.fact.user == want.fact.user);
    CHECK(rec.fact.tokens == want.fact.tokens);
    CHECK(rec.fact.context_tokens == want.fact.context_tokens);
    CHECK(rec.fact.time == 0);
  }
  // Then, as a lazy stream: the other users' facts just before their first request or memory
  // write, and the same requests (ids, users, times, facts, resolved through dense indices).
  std::vector<FactId> dense_lazy, dense_mixed;
  for (const auto& f : start) dense_mixed.push_back(f.fact.id);
  std::set<std::uint64_t> declared;
  for (const auto& f : start) declared.insert(f.fact.user);
  std::uint64_t requests = 0;
  bool checked_start = false;
  while (lazy.next(rec)) {
    if (rec.kind == RecordKind::kHeader) continue;
    if (rec.kind != RecordKind::kRequest) {
      dense_lazy.push_back(rec.fact.id);
      if (rec.kind == RecordKind::kFact && declared.count(rec.fact.user) != 0) continue;
    }
    TraceRecord got;
    REQUIRE(mixed.next(got));
    if (!checked_start) {
      CHECK(mixed.start_records() == 1 + start.size());
      checked_start = true;
    }
    REQUIRE(got.kind == rec.kind);
    if (rec.kind == RecordKind::kRequest) {
      ++requests;
      CHECK(got.request.id == rec.request.id);
      CHECK(got.request.user == rec.request.user);
      CHECK(got.request.time == rec.request.time);
      CHECK(got.request.facts == rec.request.facts);
      std::vector<FactId> want, have;
      for (const auto d : lazy.request_fact_indices()) want.push_back(dense_lazy.at(d));
      for (const auto d : mixed.request_fact_indices()) have.push_back(dense_mixed.at(d));
      CHECK(have == want);
    } else {
      CHECK(got.fact.id == rec.fact.id);
      CHECK(got.fact.time == rec.fact.time);
      if (got.kind == RecordKind::kFact) CHECK(declared.count(got.fact.user) == 0);
      dense_mixed.push_back(got.fact.id);
    }
  }
  CHECK_FALSE(mixed.next(rec));
  CHECK(requests == o.requests);
  CHECK(start.size() * 2 < eager.facts_declared());  // (all at t=0: it stopped at a request)
}

TEST_CASE("a population's users one at a time declare the stream's facts at t=0") {
  auto o = small();
  SyntheticStream eager(o, false);
  SyntheticUsers users(o);
  CHECK(users.users() == o.users);
  std::vector<std::vector<std::uint32_t>> tokens(o.users);
  TraceRecord rec;
  while (eager.next(rec)) {
    if (rec.kind == RecordKind::kFact) tokens[rec.fact.user].push_back(rec.fact.tokens);
  }
  for (std::uint64_t u = 0; u < o.users; ++u) {
    CAPTURE(u);
    CHECK(users.static_tokens(u) == tokens[u]);
  }
}
