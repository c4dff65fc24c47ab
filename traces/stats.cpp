#include "traces/stats.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <vector>

#include "traces/record_stream.h"

namespace inferscale {

namespace {

/// Running min / sum / max.
class Acc {
 public:
  void add(double v) {
    min_ = n_ == 0 ? v : std::min(min_, v);
    max_ = n_ == 0 ? v : std::max(max_, v);
    sum_ += v;
    ++n_;
  }
  Spread spread() const {
    Spread s;
    s.n = n_;
    if (n_ > 0) {
      s.min = min_;
      s.max = max_;
      s.mean = sum_ / static_cast<double>(n_);
    }
    return s;
  }

 private:
  std::uint64_t n_ = 0;
  double min_ = 0, max_ = 0, sum_ = 0;
};

struct UserAgg {
  std::uint64_t facts = 0, fact_tokens = 0, requests = 0;
};

/// Per-user aggregates: dense vector for small ids, hash map for the rest.
class Users {
 public:
  UserAgg& at(UserId u) {
    if (u < kDense) {
      if (u >= dense_.size()) dense_.resize(std::max<std::size_t>(u + 1, dense_.size() * 3 / 2));
      if (u >= seen_.size()) seen_.resize(dense_.size(), false);
      seen_[u] = true;
      return dense_[u];
    }
    return sparse_[u];
  }
  template <class F>
  void for_each(F f) const {
    for (std::size_t u = 0; u < dense_.size(); ++u) {
      if (u < seen_.size() && seen_[u]) f(dense_[u]);
    }
    for (const auto& [id, agg] : sparse_) f(agg);
  }

 private:
  static constexpr UserId kDense = UserId{1} << 26;
  std::vector<UserAgg> dense_;
  std::vector<bool> seen_;
  std::unordered_map<UserId, UserAgg> sparse_;
};

/// Fact sources (dia keys) by the reader's dense fact index, and per user the sorted keys of
/// all its facts so far (the recall ceiling).
class Sources {
 public:
  void add(std::uint32_t dense, UserId user, const std::string& source) {
    if (source.empty()) {
      if (!begin_.empty()) fill(dense + 1);
      return;
    }
    fill(dense);
    tmp_.clear();
    parse_dia_ids(source, tmp_);
    keys_.insert(keys_.end(), tmp_.begin(), tmp_.end());
    begin_.push_back(static_cast<std::uint32_t>(keys_.size()));
    auto& u = user_keys(user);
    u.keys.insert(u.keys.end(), tmp_.begin(), tmp_.end());
    u.sorted = false;
  }
  bool any() const { return !begin_.empty(); }
  /// Appends the keys of dense fact i (none if it has no source) as one retrieved fact.
  void append(std::uint32_t i, RetrievedSources& out) const {
    if (i + 1 >= begin_.size()) {
      out.add_fact(nullptr, nullptr);
      return;
    }
    out.add_fact(keys_.data() + begin_[i], keys_.data() + begin_[i + 1]);
  }
  const std::vector<DiaKey>& of_user(UserId user) {
    auto& u = user_keys(user);
    if (!u.sorted) {
      std::sort(u.keys.begin(), u.keys.end());
      u.keys.erase(std::unique(u.keys.begin(), u.keys.end()), u.keys.end());
      u.sorted = true;
    }
    return u.keys;
  }

 private:
  void fill(std::uint32_t dense) {
    if (begin_.empty()) begin_.push_back(0);
    while (begin_.size() < static_cast<std::size_t>(dense) + 1) {
      begin_.push_back(static_cast<std::uint32_t>(keys_.size()));
    }
  }
  struct UserKeys {
    std::vector<DiaKey> keys;
    bool sorted = true;
  };
  /// Records come user by user and requests of a user cluster: remember the last lookup.
  UserKeys& user_keys(UserId user) {
    if (last_ == nullptr || last_user_ != user) {
      last_ = &by_user_[user];  // unordered_map references stay valid across inserts
      last_user_ = user;
    }
    return *last_;
  }
  UserKeys* last_ = nullptr;
  UserId last_user_ = 0;
  std::vector<std::uint32_t> begin_;  // dense fact i: keys_[begin_[i], begin_[i + 1])
  std::vector<DiaKey> keys_;
  std::unordered_map<UserId, UserKeys> by_user_;
  std::vector<DiaKey> tmp_;
};

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return buf;
}

std::string spread_text(const Spread& s, int decimals = 1) {
  char buf[128];
  std::snprintf(buf, sizeof(buf), "min %.*f, mean %.*f, max %.*f", 0, s.min, decimals, s.mean, 0,
                s.max);
  return buf;
}

nlohmann::json spread_json(const Spread& s) {
  return {{"n", s.n}, {"min", s.min}, {"mean", s.mean}, {"max", s.max}};
}

}  // namespace

TraceStats trace_stats(const std::string& path, const StatsOptions& options) {
  TraceStats s;
  s.path = path;
  std::error_code ec;
  s.bytes = std::filesystem::file_size(path, ec);
  s.kv_bytes_per_token = options.kv_bytes_per_token;
  const auto stream = open_trace(path);
  RecordStream& reader = *stream;
  TraceRecord rec;
  Users users;
  Sources sources;
  RecallAccumulator recall;
  std::map<std::uint32_t, std::uint64_t> k_hist;
  Acc k, fact_tokens, query_tokens, output_tokens, context_turns;
  RetrievedSources retrieved;
  std::vector<DiaKey> evidence;
  bool first_request = true;
  while (reader.next(rec)) {
    switch (rec.kind) {
      case RecordKind::kHeader:
        s.has_header = true;
        s.header = rec.header;
        break;
      case RecordKind::kFact:
      case RecordKind::kMemoryWrite: {
        const auto& f = rec.fact;
        (rec.kind == RecordKind::kFact ? s.facts : s.memory_writes)++;
        fact_tokens.add(f.tokens);
        if (!f.context_tokens.empty())
          context_turns.add(static_cast<double>(f.context_tokens.size()));
        auto& u = users.at(f.user);
        ++u.facts;
        u.fact_tokens += f.tokens;
        sources.add(reader.dense_of(f.id), f.user, f.source);
        break;
      }
      case RecordKind::kRequest: {
        const auto& r = rec.request;
        ++s.requests;
        const auto n = static_cast<std::uint32_t>(r.facts.size());
        k.add(n);
        ++k_hist[n];
        query_tokens.add(r.query_tokens);
        output_tokens.add(r.output_tokens);
        ++users.at(r.user).requests;
        if (first_request) s.first_request_ns = r.time;
        first_request = false;
        s.last_request_ns = r.time;
        if (r.qa.category >= 1 && r.qa.category <= 4 && !r.qa.evidence.empty() && sources.any()) {
          evidence.clear();
          for (const auto& e : r.qa.evidence) parse_dia_ids(e, evidence);
          retrieved.clear();
          for (const auto dense : reader.request_fact_indices()) sources.append(dense, retrieved);
          recall.add(r.qa.category, evidence, retrieved, sources.of_user(r.user));
        }
        break;
      }
    }
  }
  s.k = k.spread();
  std::uint64_t seen = 0;
  for (const auto& [value, count] : k_hist) {
    seen += count;
    if (2 * seen >= s.requests) {
      s.k_p50 = value;
      break;
    }
  }
  s.fact_tokens = fact_tokens.spread();
  s.query_tokens = query_tokens.spread();
  s.output_tokens = output_tokens.spread();
  s.context_turns = context_turns.spread();
  Acc per_user_facts, per_user_tokens, per_user_kv, per_user_requests;
  users.for_each([&](const UserAgg& u) {
    ++s.users;
    if (u.facts > 0) {
      per_user_facts.add(static_cast<double>(u.facts));
      per_user_tokens.add(static_cast<double>(u.fact_tokens));
      const double kv =
          static_cast<double>(u.fact_tokens) * static_cast<double>(options.kv_bytes_per_token);
      per_user_kv.add(kv);
      s.total_fact_kv_bytes += kv;
    }
    if (u.requests > 0) per_user_requests.add(static_cast<double>(u.requests));
  });
  s.facts_per_user = per_user_facts.spread();
  s.fact_tokens_per_user = per_user_tokens.spread();
  s.fact_kv_bytes_per_user = per_user_kv.spread();
  s.requests_per_user = per_user_requests.spread();
  if (s.requests > 1 && s.last_request_ns > s.first_request_ns) {
    s.arrival_rate_per_s = static_cast<double>(s.requests - 1) /
                           (static_cast<double>(s.last_request_ns - s.first_request_ns) / 1e9);
  }
  if (recall.questions() > 0) {
    s.has_recall = true;
    RecallReport full = recall.report();
    // recall@k beyond the largest k a request retrieved says nothing new: drop those rows.
    RecallReport& r = s.recall;
    r = full;
    r.ks.clear();
    r.recall.clear();
    for (auto& c : r.category_recall) c.clear();
    for (std::size_t j = 0; j < full.ks.size(); ++j) {
      if (full.ks[j] > s.k.max && j > 0) continue;
      r.ks.push_back(full.ks[j]);
      r.recall.push_back(full.recall[j]);
      for (std::size_t c = 0; c < r.category_recall.size(); ++c) {
        r.category_recall[c].push_back(full.category_recall[c][j]);
      }
    }
  }
  return s;
}

std::string stats_text(const TraceStats& s) {
  std::string o;
  char buf[256];
  auto line = [&](const char* fmt, auto... args) {
    std::snprintf(buf, sizeof(buf), fmt, args...);
    o += buf;
    o += '\n';
  };
  line("trace: %s (%s)", s.path.c_str(), human_bytes(static_cast<double>(s.bytes)).c_str());
  if (s.has_header) {
    const auto& h = s.header;
    std::string arrival = h.arrival == ArrivalMode::kOpen ? "open loop" : "closed loop";
    if (h.arrival == ArrivalMode::kClosedLoop) {
      std::snprintf(buf, sizeof(buf), " (concurrency %u, think time %.3f s)", h.concurrency,
                    static_cast<double>(h.think_time_ns) / 1e9);
      arrival += buf;
    }
    line("source: %s; arrivals: %s; k: %u; tokens per word: %g",
         h.source.empty() ? "(none)" : h.source.c_str(), arrival.c_str(), h.k, h.tokens_per_word);
    if (!h.description.empty()) line("description: %s", h.description.c_str());
  } else {
    line("header: none");
  }
  line("users: %llu", static_cast<unsigned long long>(s.users));
  line("facts: %llu at start, %llu memory writes", static_cast<unsigned long long>(s.facts),
       static_cast<unsigned long long>(s.memory_writes));
  line("requests: %llu", static_cast<unsigned long long>(s.requests));
  if (s.requests > 0) {
    line("k (facts per request): %s, p50 %u", spread_text(s.k).c_str(), s.k_p50);
    line("query tokens: %s", spread_text(s.query_tokens).c_str());
    line("output tokens: %s", spread_text(s.output_tokens).c_str());
    line("requests per user: %s", spread_text(s.requests_per_user).c_str());
  }
  if (s.fact_tokens.n > 0) {
    line("tokens per fact: %s", spread_text(s.fact_tokens).c_str());
    line("facts per user: %s", spread_text(s.facts_per_user).c_str());
    line("fact tokens per user: %s", spread_text(s.fact_tokens_per_user).c_str());
    line("fact KV per user at %llu B/token: min %s, mean %s, max %s; all users %s",
         static_cast<unsigned long long>(s.kv_bytes_per_token),
         human_bytes(s.fact_kv_bytes_per_user.min).c_str(),
         human_bytes(s.fact_kv_bytes_per_user.mean).c_str(),
         human_bytes(s.fact_kv_bytes_per_user.max).c_str(),
         human_bytes(s.total_fact_kv_bytes).c_str());
  }
  if (s.context_turns.n > 0) {
    line("context turns per fact: %s (over %llu facts)", spread_text(s.context_turns).c_str(),
         static_cast<unsigned long long>(s.context_turns.n));
  }
  if (s.requests > 0) {
    const double span = static_cast<double>(s.last_request_ns - s.first_request_ns) / 1e9;
    if (s.arrival_rate_per_s > 0) {
      line("arrivals: %.3f s to %.3f s (%.3f s), %.3f requests/s",
           static_cast<double>(s.first_request_ns) / 1e9,
           static_cast<double>(s.last_request_ns) / 1e9, span, s.arrival_rate_per_s);
    } else {
      line("arrivals: all at %.3f s (closed loop or a single request)",
           static_cast<double>(s.first_request_ns) / 1e9);
    }
  }
  if (s.has_recall) {
    line(
        "recall@k against QA evidence (%llu questions of categories 1-4 with evidence, %llu "
        "evidence turns):",
        static_cast<unsigned long long>(s.recall.questions),
        static_cast<unsigned long long>(s.recall.evidence));
    o += recall_markdown(s.recall);
  }
  return o;
}

std::string stats_json(const TraceStats& s) {
  nlohmann::json j;
  j["path"] = s.path;
  j["bytes"] = s.bytes;
  if (s.has_header) {
    const auto& h = s.header;
    j["header"] = {{"source", h.source},
                   {"arrival", h.arrival == ArrivalMode::kOpen ? "open" : "closed_loop"},
                   {"concurrency", h.concurrency},
                   {"think_time_ns", h.think_time_ns},
                   {"tokens_per_word", h.tokens_per_word},
                   {"k", h.k},
                   {"description", h.description}};
  }
  j["users"] = s.users;
  j["facts"] = s.facts;
  j["memory_writes"] = s.memory_writes;
  j["requests"] = s.requests;
  j["k"] = spread_json(s.k);
  j["k"]["p50"] = s.k_p50;
  j["fact_tokens"] = spread_json(s.fact_tokens);
  j["facts_per_user"] = spread_json(s.facts_per_user);
  j["fact_tokens_per_user"] = spread_json(s.fact_tokens_per_user);
  j["kv_bytes_per_token"] = s.kv_bytes_per_token;
  j["fact_kv_bytes_per_user"] = spread_json(s.fact_kv_bytes_per_user);
  j["total_fact_kv_bytes"] = s.total_fact_kv_bytes;
  j["requests_per_user"] = spread_json(s.requests_per_user);
  j["query_tokens"] = spread_json(s.query_tokens);
  j["output_tokens"] = spread_json(s.output_tokens);
  j["context_turns"] = spread_json(s.context_turns);
  j["first_request_ns"] = s.first_request_ns;
  j["last_request_ns"] = s.last_request_ns;
  j["arrival_rate_per_s"] = s.arrival_rate_per_s;
  if (s.has_recall) {
    const auto& r = s.recall;
    nlohmann::json rj;
    rj["questions"] = r.questions;
    rj["evidence"] = r.evidence;
    rj["ceiling"] = r.ceiling;
    for (std::size_t i = 0; i < r.ks.size(); ++i) {
      rj["recall_at"][std::to_string(r.ks[i])] = r.recall[i];
    }
    for (int c = 1; c <= 4; ++c) {
      nlohmann::json cj;
      cj["questions"] = r.category_questions[c];
      cj["ceiling"] = r.category_ceiling[c];
      for (std::size_t i = 0; i < r.ks.size(); ++i) {
        cj["recall_at"][std::to_string(r.ks[i])] = r.category_recall[c][i];
      }
      rj["category"][std::to_string(c)] = cj;
    }
    j["recall"] = rj;
  }
  return j.dump(2) + "\n";
}

}  // namespace inferscale
