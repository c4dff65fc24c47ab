// Property checks of an eviction policy (policy_check.h). A small store of its own, not the
// simulator's StoreTier: it calls the policy as a tier does (on_access, on_hit, victim, on_evict,
// on_insert, on_remove), checks every answer before acting on it, and records each decision so
// that runs can be compared.
#include "policies/policy_check.h"

#include <algorithm>
#include <exception>
#include <optional>
#include <random>
#include <sstream>

namespace inferscale {
namespace {

struct SeqFact {
  std::uint64_t bytes = 10;
  UserId user = 0;
  SimTime cost_ns = 100;
};
struct SeqRequest {
  std::vector<FactId> facts;         // distinct
  std::vector<FactId> other_pins;    // pinned while it runs, if resident (other requests)
  std::optional<FactId> invalidate;  // removed after it, if resident
  UserId user = 0;
  SimTime time = 0;
};
struct Sequence {
  std::vector<SeqFact> facts;
  std::vector<SeqRequest> requests;
  std::vector<std::vector<std::int64_t>> positions;  // by fact: the requests naming it, in order
  std::uint64_t capacity_bytes = 0;
};

Sequence generate(std::uint64_t seed, std::size_t index, const PolicyCheckOptions& o) {
  std::mt19937_64 rng(seed * 1000003 + index);
  const auto uniform = [&] { return double(rng() >> 11) * 0x1.0p-53; };
  Sequence s;
  std::uint64_t total = 0;
  for (std::size_t f = 0; f < o.facts; ++f) {
    s.facts.push_back(
        SeqFact{10 * (1 + rng() % 5), f % 6, static_cast<SimTime>(50 + rng() % 1000)});
    total += s.facts.back().bytes;
  }
  s.positions.resize(o.facts);
  SimTime time = 0;
  for (std::size_t i = 0; i < o.requests; ++i) {
    SeqRequest r;
    const std::size_t k = 1 + rng() % 4;
    while (r.facts.size() < k) {
      const double u = uniform();
      const auto f = static_cast<FactId>(double(o.facts) * u * u * u);
      if (std::find(r.facts.begin(), r.facts.end(), f) == r.facts.end()) r.facts.push_back(f);
    }
    for (FactId f : r.facts) s.positions[f].push_back(static_cast<std::int64_t>(i));
    for (int j = 0; j < 3; ++j) r.other_pins.push_back(rng() % o.facts);
    if (rng() % 40 == 0) r.invalidate = rng() % o.facts;
    r.user = s.facts[r.facts[0]].user;
    time += static_cast<SimTime>(1 + rng() % 1000) * kNsPerUs;
    r.time = time;
    s.requests.push_back(std::move(r));
  }
  s.capacity_bytes = total * (index % 2 == 0 ? 10 : 30) / 100;
  return s;
}

/// The run as the policy sees it: pins, users, and the future from the sequence itself.
class CheckView final : public RunView {
 public:
  explicit CheckView(const Sequence& s) : seq_(&s) {}
  std::vector<char> pins;
  UserId in_flight = 0;
  std::vector<SimTime> last_active;  // by user
  std::int64_t pos = 0;

  bool pinned(FactId id) const override { return id < pins.size() && pins[id] != 0; }
  bool user_in_flight(UserId user) const override { return user == in_flight; }
  SimTime user_last_active(UserId user) const override {
    return user < last_active.size() ? last_active[user] : kNever;
  }
  std::int64_t next_access(FactId id) const override {
    if (id >= seq_->positions.size()) return kNever;
    const auto& p = seq_->positions[id];
    const auto it = std::upper_bound(p.begin(), p.end(), pos);
    return it == p.end() ? kNever : *it;
  }
  std::int64_t position() const override { return pos; }
  FactId fact_id_bound() const override { return seq_->facts.size(); }

 private:
  const Sequence* seq_;
};

struct Decision {
  std::size_t request = 0;
  char kind =
      0;  // h hit, m miss, e evicted, i inserted, b not inserted (bypass or refused), r removed
  FactId fact = 0;
  bool operator==(const Decision&) const = default;
};

std::string describe(const Decision& d) {
  switch (d.kind) {
    case 'h':
      return "hit on fact " + std::to_string(d.fact);
    case 'm':
      return "miss on fact " + std::to_string(d.fact);
    case 'e':
      return "evicted fact " + std::to_string(d.fact);
    case 'i':
      return "inserted fact " + std::to_string(d.fact);
    case 'b':
      return "did not insert fact " + std::to_string(d.fact);
    default:
      return "invalidated fact " + std::to_string(d.fact);
  }
}

struct RunResult {
  std::vector<Decision> decisions;
  std::string capacity;  // first violation of each property, or empty
  std::string pins;
  std::string repeat;
  std::string exception;  // what the policy threw, if it did
};

/// One run of `seq` through a fresh policy; with `probe`, extra victim() calls before each one
/// that counts.
RunResult run(const PolicyFactory& make, const Sequence& seq, std::size_t seq_index, bool probe) {
  RunResult out;
  const auto at = [&](std::size_t i) {
    return "sequence " + std::to_string(seq_index + 1) + ", request " + std::to_string(i + 1) +
           ": ";
  };
  const std::size_t n = seq.facts.size();
  CheckView view(seq), other(seq);
  view.pins.assign(n, 0);
  view.last_active.assign(6, kNever);
  other.pins.assign(n, 0);
  other.last_active.assign(6, kNever);
  std::vector<char> resident(n, 0);
  std::vector<SimTime> last_access(n, 0);
  std::uint64_t used = 0;
  std::mt19937_64 rng(seq_index);  // the probes' contexts; never changes a decision
  std::size_t i = 0;
  try {
    const auto policy = make(seq.capacity_bytes);
    policy->attach(&view);
    const auto entry_of = [&](FactId f) {
      CacheEntry e;
      e.id = f;
      e.user = seq.facts[f].user;
      e.bytes = seq.facts[f].bytes;
      e.tokens = static_cast<std::uint32_t>(e.bytes);
      e.recompute_cost_ns = seq.facts[f].cost_ns;
      e.last_access = last_access[f];
      return e;
    };
    const auto is_resident = [&](FactId f) { return f < n && resident[f] != 0; };
    for (; i < seq.requests.size(); ++i) {
      const SeqRequest& r = seq.requests[i];
      view.pos = static_cast<std::int64_t>(i);
      view.in_flight = r.user;
      view.last_active[r.user] = r.time;
      std::fill(view.pins.begin(), view.pins.end(), 0);
      for (FactId f : r.other_pins) {
        if (resident[f]) view.pins[f] = 1;
      }
      std::vector<FactId> misses;
      for (FactId f : r.facts) {
        const CacheEntry e = entry_of(f);
        policy->on_access(e, r.time);
        if (resident[f]) {
          policy->on_hit(e, r.time);
          out.decisions.push_back({i, 'h', f});
          last_access[f] = r.time;
        } else {
          out.decisions.push_back({i, 'm', f});
          misses.push_back(f);
        }
        view.pins[f] = 1;
      }
      for (FactId f : misses) {
        const CacheEntry e = entry_of(f);
        bool inserted = e.bytes <= seq.capacity_bytes;
        while (inserted && used + e.bytes > seq.capacity_bytes) {
          EvictionContext ctx;
          ctx.now = r.time;
          ctx.bytes_needed = used + e.bytes - seq.capacity_bytes;
          ctx.incoming = &e;
          ctx.run = &view;
          if (probe) {
            const auto a = policy->victim(ctx);
            const auto b = policy->victim(ctx);
            if (a != b && out.repeat.empty()) {
              const auto name = [](const std::optional<FactId>& v) {
                return v ? "fact " + std::to_string(*v) : std::string("no victim");
              };
              out.repeat =
                  at(i) + "two victim() calls in a row answered " + name(a) + ", then " + name(b);
            }
            std::fill(other.pins.begin(), other.pins.end(), 0);
            for (int j = 0; j < 5; ++j) other.pins[rng() % n] = 1;
            other.in_flight = rng() % 6;
            other.last_active = view.last_active;
            other.pos = view.pos;
            EvictionContext odd;
            odd.now = static_cast<SimTime>(rng() % 1000000);
            const CacheEntry stranger = entry_of(rng() % n);
            odd.incoming = &stranger;
            odd.run = &other;
            policy->victim(odd);
          }
          const auto v = policy->victim(ctx);
          if (!v) {
            inserted = false;
          } else if (!is_resident(*v)) {
            if (out.capacity.empty()) {
              out.capacity = at(i) + "victim() returned fact " + std::to_string(*v) +
                             ", which is not resident: evicting it frees nothing (a store that "
                             "trusted it would exceed its capacity)";
            }
            inserted = false;
          } else if (view.pinned(*v)) {
            if (out.pins.empty()) {
              out.pins = at(i) + "victim() returned fact " + std::to_string(*v) +
                         ", pinned by a running request";
            }
            inserted = false;
          } else {
            policy->on_evict(*v, ctx);
            resident[*v] = 0;
            used -= seq.facts[*v].bytes;
            out.decisions.push_back({i, 'e', *v});
          }
        }
        if (!inserted) {
          out.decisions.push_back({i, 'b', f});
          continue;
        }
        policy->on_insert(e, r.time);
        resident[f] = 1;
        used += e.bytes;
        last_access[f] = r.time;
        out.decisions.push_back({i, 'i', f});
        if (used > seq.capacity_bytes && out.capacity.empty()) {
          out.capacity = at(i) + "the store holds " + std::to_string(used) + " bytes, over its " +
                         std::to_string(seq.capacity_bytes);
        }
      }
      if (r.invalidate && resident[*r.invalidate]) {
        const FactId f = *r.invalidate;
        policy->on_remove(f);
        resident[f] = 0;
        used -= seq.facts[f].bytes;
        out.decisions.push_back({i, 'r', f});
      }
    }
  } catch (const std::exception& e) {
    out.exception = at(i) + "the policy threw: " + e.what();
  }
  return out;
}

/// The first difference of two decision lists, or empty.
std::string first_difference(const std::vector<Decision>& a, const std::vector<Decision>& b,
                             std::size_t seq_index, const char* a_name, const char* b_name) {
  const std::size_t n = std::min(a.size(), b.size());
  std::size_t j = 0;
  while (j < n && a[j] == b[j]) ++j;
  if (j == n && a.size() == b.size()) return "";
  const std::size_t request = j < a.size() ? a[j].request : b[j].request;
  std::ostringstream s;
  s << "sequence " << seq_index + 1 << ", request " << request + 1 << ": " << a_name << " "
    << (j < a.size() ? describe(a[j]) : std::string("ended")) << ", " << b_name << " "
    << (j < b.size() ? describe(b[j]) : std::string("ended"));
  return s.str();
}

void fail(PropertyResult& p, const std::string& reason) {
  if (!p.passed || reason.empty()) return;
  p.passed = false;
  p.reason = reason;
}

}  // namespace

bool PolicyCheckReport::passed() const {
  return std::all_of(properties.begin(), properties.end(),
                     [](const PropertyResult& p) { return p.passed; });
}

const PropertyResult* PolicyCheckReport::find(const std::string& name) const {
  for (const auto& p : properties) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

PolicyCheckReport check_eviction_policy(const PolicyFactory& make,
                                        const PolicyCheckOptions& options) {
  PolicyCheckReport report;
  report.properties = {
      {"capacity", "victims are resident, the store never exceeds its capacity", true, ""},
      {"pins", "no pinned fact is chosen as victim", true, ""},
      {"side-effect-free victim",
       "victim() twice gives the same answer; extra calls change no "
       "later decision",
       true, ""},
      {"determinism", "two runs of the same sequence give identical decisions", true, ""}};
  auto& capacity = report.properties[0];
  auto& pins = report.properties[1];
  auto& pure = report.properties[2];
  auto& deterministic = report.properties[3];
  for (std::size_t s = 0; s < options.sequences; ++s) {
    const Sequence seq = generate(options.seed, s, options);
    const RunResult first = run(make, seq, s, false);
    fail(capacity, first.exception);
    fail(capacity, first.capacity);
    fail(pins, first.pins);
    const RunResult second = run(make, seq, s, false);
    fail(deterministic, second.exception);
    if (first.exception.empty() && second.exception.empty()) {
      fail(deterministic,
           first_difference(first.decisions, second.decisions, s, "the first run", "the second"));
    }
    const RunResult probed = run(make, seq, s, true);
    fail(pure, probed.exception);
    fail(pure, probed.repeat);
    // A difference means extra calls changed a decision only if plain runs agree.
    if (first.exception.empty() && probed.exception.empty() &&
        first.decisions == second.decisions) {
      fail(pure, first_difference(first.decisions, probed.decisions, s,
                                  "without extra victim() calls it", "with them it"));
    }
  }
  return report;
}

}  // namespace inferscale
