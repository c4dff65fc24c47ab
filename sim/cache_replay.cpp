#include "sim/cache_replay.h"

#include <unordered_map>

#include "policies/registry.h"
#include "traces/record_stream.h"

namespace inferscale {

ReplayTrace ReplayTrace::read(const std::string& path, std::uint32_t cwe_window) {
  ReplayTrace t;
  const auto stream = open_trace(path);
  RecordStream& reader = *stream;
  TraceRecord rec;
  std::vector<std::uint8_t> in_request;
  while (reader.next(rec)) {
    if (rec.kind == RecordKind::kFact || rec.kind == RecordKind::kMemoryWrite) {
      const FactRecord& f = rec.fact;
      std::uint32_t context = 0;
      for (std::size_t i = 0; i < f.context_tokens.size() && i < cwe_window; ++i) {
        context += f.context_tokens[i];
      }
      t.fact_tokens.push_back(f.tokens);
      t.fact_context_tokens.push_back(context);
      t.fact_user.push_back(f.user);
      t.fact_created.push_back(f.time);
    } else if (rec.kind == RecordKind::kRequest) {
      in_request.resize(t.fact_tokens.size(), 0);
      for (std::uint32_t f : reader.request_fact_indices()) {
        if (in_request[f]) continue;
        in_request[f] = 1;
        t.request_facts.push_back(f);
      }
      for (auto i = t.request_offsets.back(); i < t.request_facts.size(); ++i) {
        in_request[t.request_facts[i]] = 0;
      }
      t.request_offsets.push_back(t.request_facts.size());
      t.request_user.push_back(rec.request.user);
      t.request_time.push_back(rec.request.time);
    }
  }
  return t;
}

std::vector<std::vector<FactId>> ReplayTrace::request_fact_lists() const {
  std::vector<std::vector<FactId>> lists(request_count());
  for (std::size_t i = 0; i < lists.size(); ++i) {
    const auto f = facts_of(i);
    lists[i].assign(f.begin(), f.end());
  }
  return lists;
}

std::uint64_t ReplayTrace::total_fact_tokens() const {
  std::uint64_t sum = 0;
  for (auto t : fact_tokens) sum += t;
  return sum;
}

namespace {

/// The run as a replay knows it: the current request's facts are pinned, its user in flight.
class ReplayView final : public RunView {
 public:
  ReplayView(std::size_t facts, AccessCursor* cursor) : pins_(facts, 0), cursor_(cursor) {}

  void begin(std::int64_t position, UserId user, SimTime now, std::span<const FactId> facts) {
    position_ = position;
    if (cursor_ != nullptr) cursor_->begin_request(position, facts);
    user_ = user;
    in_flight_ = true;
    last_active_[user] = now;
  }
  void pin(FactId f) { pins_[f] = 1; }
  void end(std::span<const FactId> facts) {
    for (FactId f : facts) pins_[f] = 0;
    in_flight_ = false;
  }

  bool pinned(FactId id) const override { return id < pins_.size() && pins_[id] != 0; }
  bool user_in_flight(UserId user) const override { return in_flight_ && user == user_; }
  SimTime user_last_active(UserId user) const override {
    auto it = last_active_.find(user);
    return it == last_active_.end() ? kNever : it->second;
  }
  std::int64_t next_access(FactId id) const override {
    return cursor_ != nullptr ? cursor_->next_access(id) : kNever;
  }
  std::int64_t position() const override { return position_; }
  FactId fact_id_bound() const override { return pins_.size(); }

 private:
  std::vector<std::uint8_t> pins_;
  AccessCursor* cursor_;
  std::int64_t position_ = -1;
  UserId user_ = 0;
  bool in_flight_ = false;
  std::unordered_map<UserId, SimTime> last_active_;
};

}  // namespace

ReplayResult replay_cache(const ReplayTrace& trace, const AccessOracle* oracle,
                          const ReplayOptions& o) {
  const EvictionInfo* info = PolicyRegistry::find_eviction(o.eviction);
  if (info != nullptr && info->offline && oracle == nullptr) {
    throw InputError("eviction", "policy '" + o.eviction +
                                     "' is offline: the replay needs the trace's access oracle");
  }
  PolicyArgs ev{o.eviction_params, o.capacity_bytes, o.seed};
  PolicyArgs ad{o.admission_params, o.capacity_bytes, o.seed ^ 0x9e3779b97f4a7c15ull};
  StoreTier tier("gpu", o.capacity_bytes, PolicyRegistry::make_eviction(o.eviction, ev, "eviction"),
                 PolicyRegistry::make_admission(o.admission, ad, "admission"), o.eviction);

  std::vector<CacheEntry> entries(trace.fact_count());
  for (std::size_t f = 0; f < entries.size(); ++f) {
    CacheEntry& e = entries[f];
    e.id = f;
    e.user = trace.fact_user[f];
    e.tokens = trace.fact_tokens[f];
    e.bytes = std::uint64_t(e.tokens) * o.kv_bytes_per_token;
    e.recompute_cost_ns =
        o.encode_fixed_ns +
        o.encode_ns_per_token * SimTime(trace.fact_tokens[f] + trace.fact_context_tokens[f]);
    e.created = trace.fact_created[f];
  }

  std::unique_ptr<AccessCursor> cursor;
  if (oracle != nullptr) cursor = std::make_unique<AccessCursor>(*oracle);
  ReplayView view(trace.fact_count(), cursor.get());
  tier.set_view(&view);

  std::vector<FactId> misses;
  ReplayResult result;
  for (std::size_t i = 0; i < trace.request_count(); ++i) {
    const auto facts = trace.facts_of(i);
    const SimTime now = trace.request_time[i];
    view.begin(static_cast<std::int64_t>(i), trace.request_user[i], now, facts);
    misses.clear();
    for (FactId f : facts) {
      const double cost = double(entries[f].recompute_cost_ns);
      result.lookup_cost_ns += cost;
      if (!tier.lookup(entries[f], now)) {
        misses.push_back(f);
        result.miss_cost_ns += cost;
      }
      view.pin(f);
    }
    for (FactId f : misses) tier.insert(entries[f], now, nullptr);
    view.end(facts);
  }
  result.stats = tier.stats();
  return result;
}

}  // namespace inferscale
