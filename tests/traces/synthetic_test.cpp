#include "traces/synthetic.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

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
