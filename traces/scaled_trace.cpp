#include "traces/scaled_trace.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <unordered_map>

#include "traces/error.h"
#include "traces/prng.h"
#include "traces/reader.h"
#include "traces/workload.h"

namespace inferscale {

namespace {

std::string file_digest(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::uint64_t h = 1469598103934665603ull;
  char buf[1 << 16];
  while (f) {
    f.read(buf, sizeof buf);
    for (std::streamsize i = 0; i < f.gcount(); ++i) {
      h = (h ^ static_cast<unsigned char>(buf[i])) * 1099511628211ull;
    }
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

}  // namespace

SourceTrace read_source_trace(const std::string& path) {
  SourceTrace s;
  s.path = path;
  TraceReader reader(path);
  TraceRecord rec;
  std::unordered_map<UserId, std::uint32_t> user_index;
  std::unordered_map<FactId, std::uint32_t> fact_index;
  auto dense_user = [&](UserId u) {
    auto [it, fresh] = user_index.try_emplace(u, std::uint32_t(s.user_facts.size()));
    if (fresh) s.user_facts.emplace_back();
    return it->second;
  };
  while (reader.next(rec)) {
    if (rec.kind == RecordKind::kFact || rec.kind == RecordKind::kMemoryWrite) {
      FactRecord f = rec.fact;
      const std::uint32_t d = std::uint32_t(s.facts.size());
      fact_index[f.id] = d;
      f.user = dense_user(f.user);
      f.id = d;
      f.time = 0;
      f.text.clear();
      s.user_facts[f.user].push_back(d);
      s.facts.push_back(std::move(f));
    } else if (rec.kind == RecordKind::kRequest) {
      RequestRecord r = rec.request;
      r.user = dense_user(r.user);
      for (auto& id : r.facts) id = fact_index.at(id);  // the reader checked they exist
      r.text.clear();
      r.qa = QaInfo{};
      s.requests.push_back(std::move(r));
    }
  }
  s.header = reader.header();
  if (s.requests.empty()) throw InputError(path, "the trace has no request to scale");
  double fact_tokens = 0;
  for (const auto& f : s.facts) fact_tokens += f.tokens;
  for (const auto& r : s.requests) {
    s.mean_query_tokens += r.query_tokens;
    s.mean_output_tokens += r.output_tokens;
    s.mean_facts_per_request += double(r.facts.size());
    for (const auto id : r.facts) s.mean_fact_tokens_per_request += s.facts[id].tokens;
  }
  const double n = double(s.requests.size());
  s.mean_query_tokens /= n;
  s.mean_output_tokens /= n;
  s.mean_fact_tokens_per_request /= n;
  s.mean_facts_per_request /= n;
  s.mean_facts_per_user = double(s.facts.size()) / double(s.users());
  s.mean_fact_tokens = s.facts.empty() ? 0 : fact_tokens / double(s.facts.size());
  s.digest = file_digest(path);
  return s;
}

void write_scaled_trace(const SourceTrace& src, const ScaleOptions& o, TraceWriter& out) {
  const std::uint64_t n_users = src.users();
  const std::uint64_t n_facts = src.facts.size();
  // The source requests whose user exists in the population (all of them unless it is smaller).
  std::vector<std::uint32_t> usable;
  for (std::uint32_t j = 0; j < src.requests.size(); ++j) {
    if (src.requests[j].user < o.users) usable.push_back(j);
  }
  if (usable.empty()) {
    throw InputError(
        "users", "no user among the trace's first " + std::to_string(o.users) + " asks anything");
  }
  Rng rng(derive_seed(o.seed, 0x5CA1Eull));
  PoissonArrivals arrivals(0, o.rate_per_s, derive_seed(o.seed, 0x5CA1Eull + 1), o.cv);
  std::vector<RequestRecord> requests(o.requests);
  std::set<UserId> askers;
  for (std::uint64_t i = 0; i < o.requests; ++i) {
    const RequestRecord& s = src.requests[usable[i % usable.size()]];
    const std::uint64_t copies = (o.users - s.user + n_users - 1) / n_users;  // u = s + b F < U
    const std::uint64_t copy = rng.below(copies);
    RequestRecord& r = requests[i];
    r = s;
    r.id = i;
    r.user = s.user + copy * n_users;
    r.time = arrivals.next();
    for (auto& f : r.facts) f += copy * n_facts;
    askers.insert(r.user);
  }
  TraceHeader h = src.header;
  h.arrival = ArrivalMode::kOpen;
  h.concurrency = 0;
  h.think_time_ns = 0;
  h.description = "scaled from " + src.path + " (" + src.digest + "): " + std::to_string(o.users) +
                  " users, " + std::to_string(o.requests) + " requests at " +
                  std::to_string(o.rate_per_s) + "/s";
  out.write(h);
  for (const UserId u : askers) {
    const std::uint64_t copy = u / n_users;
    for (const auto d : src.user_facts[u % n_users]) {
      FactRecord f = src.facts[d];
      f.id = d + copy * n_facts;
      f.user = u;
      out.write_fact(f, false);
    }
  }
  for (const auto& r : requests) out.write(r);
}

}  // namespace inferscale
