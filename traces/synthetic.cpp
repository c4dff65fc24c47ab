#include "traces/synthetic.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "traces/error.h"
#include "traces/prng.h"
#include "traces/trace.h"
#include "traces/zipf.h"

namespace inferscale {

namespace {

// Independent random streams derived from the seed (users use their id as the stream).
constexpr std::uint64_t kStreamBase = 0xC0FFEE00ull << 32;
constexpr std::uint64_t kRequestStream = kStreamBase + 1;
constexpr std::uint64_t kArrivalStream = kStreamBase + 2;
constexpr std::uint64_t kWriteStream = kStreamBase + 3;
constexpr std::uint64_t kUserRankStream = kStreamBase + 4;

/// A normal word count, rounded and clamped to [1, mean + 4 sd].
std::uint32_t draw_words(Rng& rng, double mean, double sd) {
  const double hi = std::max(1.0, std::round(mean + 4 * sd));
  const double w = std::clamp(std::round(mean + sd * rng.normal()), 1.0, hi);
  return static_cast<std::uint32_t>(w);
}

/// Uniform integer in [lo, hi].
std::uint64_t draw_between(Rng& rng, std::uint64_t lo, std::uint64_t hi) {
  return lo + rng.below(hi - lo + 1);
}

/// What the request generator remembers per user (24 bytes).
struct UserState {
  FactId first_fact = 0;
  std::uint32_t facts = 0;
  std::uint32_t available = 0;  // facts [0, available) exist now
  std::uint32_t sessions = 0;
  std::uint32_t dense_static = 0;  // dense index of its first fact (kNotDeclared: none yet)
};

constexpr std::uint32_t kNotDeclared = 0xffffffffu;
// A user of another process (keep_user): its facts are never declared here.
constexpr std::uint32_t kLeftOut = 0xfffffffeu;

/// One user's facts, regenerated identically from its own stream whenever needed.
struct UserFacts {
  std::uint32_t sessions = 0;
  std::vector<std::uint32_t> tokens;         // by local fact index
  std::vector<std::uint32_t> session_begin;  // facts of session s: [begin[s], begin[s + 1])
  std::vector<std::uint32_t> turn_tokens;    // all turns of all sessions (context_turns > 0)
  std::vector<std::uint32_t> anchor;         // by fact: position of its source turn
};

class UserGenerator {
 public:
  explicit UserGenerator(const SyntheticOptions& o) : o_(o) {
    facts_lo_ = static_cast<std::uint32_t>(
        std::max(1.0, std::round(o.facts_per_user - o.facts_per_user_spread)));
    facts_hi_ = static_cast<std::uint32_t>(
        std::max<double>(facts_lo_, std::round(o.facts_per_user + o.facts_per_user_spread)));
    turns_lo_ = static_cast<std::uint32_t>(std::max(1.0, std::ceil(o.turns_per_session / 2)));
    turns_hi_ = static_cast<std::uint32_t>(
        std::max<double>(turns_lo_, std::floor(o.turns_per_session * 3 / 2)));
  }
  std::uint32_t max_facts() const { return facts_hi_; }

  /// The user's fact and session counts alone: the first two draws of generate().
  void counts(std::uint64_t user, std::uint32_t& facts, std::uint32_t& sessions) const {
    Rng rng(derive_seed(o_.seed, user));
    facts = static_cast<std::uint32_t>(draw_between(rng, facts_lo_, facts_hi_));
    sessions = static_cast<std::uint32_t>(draw_between(rng, o_.sessions_min, o_.sessions_max));
  }

  void generate(std::uint64_t user, UserFacts& f) const {
    Rng rng(derive_seed(o_.seed, user));
    const auto n = static_cast<std::uint32_t>(draw_between(rng, facts_lo_, facts_hi_));
    f.sessions = static_cast<std::uint32_t>(draw_between(rng, o_.sessions_min, o_.sessions_max));
    f.tokens.resize(n);
    for (auto& t : f.tokens) {
      t = tokens_for_words(draw_words(rng, o_.fact_words, o_.fact_words_sd), o_.tokens_per_word);
    }
    f.session_begin.resize(f.sessions + 1);
    for (std::uint32_t s = 0; s <= f.sessions; ++s) {
      // ceil(s * n / S): facts spread evenly, in order
      f.session_begin[s] = static_cast<std::uint32_t>(
          (static_cast<std::uint64_t>(s) * n + f.sessions - 1) / f.sessions);
    }
    f.turn_tokens.clear();
    f.anchor.clear();
    if (o_.context_turns == 0) return;
    f.anchor.resize(n);
    for (std::uint32_t s = 0; s < f.sessions; ++s) {
      const auto first_turn = static_cast<std::uint32_t>(f.turn_tokens.size());
      const auto turns = static_cast<std::uint32_t>(draw_between(rng, turns_lo_, turns_hi_));
      for (std::uint32_t t = 0; t < turns; ++t) {
        f.turn_tokens.push_back(tokens_for_words(
            1 + draw_words(rng, o_.turn_words, o_.turn_words_sd), o_.tokens_per_word));
      }
      const auto b = f.session_begin[s], e = f.session_begin[s + 1];
      for (auto j = b; j < e; ++j) {
        f.anchor[j] = first_turn + static_cast<std::uint32_t>(rng.below(turns));
      }
      std::sort(f.anchor.begin() + b, f.anchor.begin() + e);
    }
  }

  /// Fills `r` for local fact j of user `f` (all but id, user and time).
  void fill(const UserFacts& f, std::uint32_t j, std::uint32_t session, FactRecord& r) const {
    r.tokens = f.tokens[j];
    r.session = static_cast<std::int32_t>(session + 1);
    r.context_tokens.clear();
    if (o_.context_turns == 0) return;
    const auto a = f.anchor[j];
    for (std::uint32_t back = 1; back <= a && back <= o_.context_turns; ++back) {
      r.context_tokens.push_back(f.turn_tokens[a - back]);
    }
  }

 private:
  const SyntheticOptions& o_;
  std::uint32_t facts_lo_ = 1, facts_hi_ = 1, turns_lo_ = 1, turns_hi_ = 1;
};

struct WriteEvent {
  SimTime time;
  std::uint64_t user;
  std::uint32_t session;
};

void check(bool ok, const char* option, const char* expected) {
  if (!ok) throw InputError(option, expected);
}

}  // namespace

void validate_synthetic_options(const SyntheticOptions& o) {
  check(o.users >= 1 && o.users <= (std::uint64_t{1} << 32), "--users",
        "expected a number of users in [1, 2^32]");
  check(o.requests <= (std::uint64_t{1} << 40), "--requests", "expected at most 2^40 requests");
  check(o.facts_per_user >= 1 && o.facts_per_user <= 1e6, "--facts-per-user",
        "expected a mean in [1, 1e6]");
  check(o.facts_per_user_spread >= 0 && o.facts_per_user_spread <= 1e6, "--facts-per-user-spread",
        "expected a spread in [0, 1e6]");
  check(o.fact_words > 0 && o.fact_words <= 1e5, "--fact-words", "expected a mean in (0, 1e5]");
  check(o.fact_words_sd >= 0 && o.fact_words_sd <= 1e5, "--fact-words-sd",
        "expected a standard deviation in [0, 1e5]");
  check(o.sessions_min >= 1 && o.sessions_min <= 1000000, "--sessions-min",
        "expected sessions in [1, 1e6]");
  check(o.sessions_max >= o.sessions_min && o.sessions_max <= 1000000, "--sessions-max",
        "expected sessions in [--sessions-min, 1e6]");
  check(o.live_sessions < o.sessions_min, "--live-sessions",
        "expected fewer live sessions than --sessions-min (every user needs facts at t=0)");
  check(o.live_sessions == 0 || o.arrival.mode == ArrivalMode::kOpen, "--live-sessions",
        "memory writes during the run need open-loop (poisson) arrivals");
  check(o.query_words > 0 && o.query_words <= 1e5, "--query-words", "expected a mean in (0, 1e5]");
  check(o.query_words_sd >= 0 && o.query_words_sd <= 1e5, "--query-words-sd",
        "expected a standard deviation in [0, 1e5]");
  check(o.output_tokens >= 1 && o.output_tokens <= (1u << 24), "--output-tokens",
        "expected tokens in [1, 2^24]");
  check(o.k >= 1 && o.k <= (1u << 20), "--k", "expected k in [1, 2^20]");
  check(o.tokens_per_word > 0 && o.tokens_per_word <= 100, "--tokens-per-word",
        "expected a ratio in (0, 100]");
  check(o.user_zipf >= 0 && o.user_zipf <= 10, "--user-zipf", "expected an exponent in [0, 10]");
  check(o.fact_zipf >= 0 && o.fact_zipf <= 10, "--fact-zipf", "expected an exponent in [0, 10]");
  check(o.context_turns <= 100000, "--context-turns", "expected at most 100000");
  check(o.turns_per_session >= 1 && o.turns_per_session <= 1e5, "--turns-per-session",
        "expected a mean in [1, 1e5]");
  check(o.turn_words > 0 && o.turn_words <= 1e5, "--turn-words", "expected a mean in (0, 1e5]");
  check(o.turn_words_sd >= 0 && o.turn_words_sd <= 1e5, "--turn-words-sd",
        "expected a standard deviation in [0, 1e5]");
  check(o.arrival.mode != ArrivalMode::kOpen ||
            (o.arrival.rate_per_s > 0 && o.arrival.rate_per_s <= 1e9),
        "--rate", "expected requests per second in (0, 1e9]");
  check(!o.replay || (o.arrival.mode == ArrivalMode::kOpen && o.replay_speedup > 0 &&
                      o.replay_speedup <= 1e9),
        "--replay", "replayed arrivals need an open loop and a positive speedup");
  check(o.arrival.cv >= 0 && o.arrival.cv <= 100, "--cv", "a coefficient of variation in [0, 100]");
  check(o.arrival.think_time_s >= 0 && o.arrival.think_time_s <= 1e9, "--think-time-s",
        "expected seconds in [0, 1e9]");
  check(o.start_s >= 0 && o.start_s <= 1e9, "--start-s", "expected seconds in [0, 1e9]");
}

namespace {
/// The options, with at most as many requests as a replay has rows.
SyntheticOptions clamped(SyntheticOptions o) {
  if (o.replay) o.requests = std::min<std::uint64_t>(o.requests, o.replay->size());
  return o;
}
}  // namespace

struct SyntheticStream::Impl {
  const SyntheticOptions o;
  const bool lazy;
  std::string name;
  UserGenerator gen{o};
  SimTime start_ns = 0;
  TraceHeader header;
  std::vector<UserState> users;
  std::vector<WriteEvent> writes;
  std::vector<std::uint32_t>
      live_dense;  // by user * live_sessions + i: dense index of its first fact
  std::vector<std::uint64_t> by_rank;
  ZipfTable user_zipf;
  ZipfSampler fact_sampler{gen.max_facts(), o.fact_zipf};
  std::vector<std::uint32_t> chosen;
  Rng rng{derive_seed(o.seed, kRequestStream)};
  PoissonArrivals arrivals{0, 1, 0};
  UserFacts uf;
  FactId population = 0;
  std::uint64_t declared = 0;
  // Records ready to hand out, [head, ready) of `queue` (reused, so vectors keep capacity).
  std::vector<TraceRecord> queue;
  std::vector<std::uint64_t> queue_omitted;  // by queue slot: `omitted` when it was pushed
  std::size_t head = 0, ready = 0;
  // Records of the whole trace left out so far (other processes' users' facts and memory
  // writes), and as of the last record handed out.
  std::uint64_t omitted = 0, omitted_before_last = 0;
  std::vector<std::uint32_t> dense;  // of the last request
  enum class Phase { kHeader, kStatic, kRequests, kTail, kDone } phase = Phase::kHeader;
  std::uint64_t next_user = 0, next_request = 0;
  std::size_t wi = 0;
  std::function<bool(std::uint64_t)> keep_user;  // empty: every user's requests in full
  // Lazy with users declared at the start (declare_at_start): which, from which user on.
  std::function<bool(std::uint64_t)> eager_user;
  std::uint64_t first_eager = 0;
  std::uint64_t pushed = 0;                  // records queued so far (not left out)
  std::uint64_t start_records = UINT64_MAX;  // with eager_user, once the start is over

  Impl(const SyntheticOptions& opts, bool lazy_facts) : o(clamped(opts)), lazy(lazy_facts) {
    validate_synthetic_options(o);
    start_ns = seconds_to_ns(o.start_s);
    name = "generated trace (seed " + std::to_string(o.seed) + ")";
    header.source = "synthetic";
    header.arrival = o.arrival.mode;
    if (o.arrival.mode == ArrivalMode::kClosedLoop) {
      header.concurrency =
          o.arrival.concurrency > 0
              ? o.arrival.concurrency
              : static_cast<std::uint32_t>(std::min<std::uint64_t>(o.users, 1u << 30));
      header.think_time_ns = seconds_to_ns(o.arrival.think_time_s);
    }
    header.tokens_per_word = o.tokens_per_word;
    header.k = o.k;
    header.description = "synthetic: " + std::to_string(o.users) + " users, " +
                         std::to_string(o.requests) + " requests, user_zipf " +
                         std::to_string(o.user_zipf) + ", fact_zipf " +
                         std::to_string(o.fact_zipf) + ", live sessions " +
                         std::to_string(o.live_sessions) + ", seed " + std::to_string(o.seed);
    // Per user: counts only (two draws); facts themselves are drawn when they are declared.
    users.resize(o.users);
    for (std::uint64_t u = 0; u < o.users; ++u) {
      auto& st = users[u];
      gen.counts(u, st.facts, st.sessions);
      st.first_fact = population;
      population += st.facts;
      st.available = session_begin(st, st.sessions - o.live_sessions);
      st.dense_static = kNotDeclared;
    }
    // Memory writes of live sessions: uniform times over the expected request span.
    if (o.live_sessions > 0) {
      live_dense.assign(o.users * o.live_sessions, kNotDeclared);
      Rng wrng(derive_seed(o.seed, kWriteStream));
      const double span_ns = static_cast<double>(o.requests) / o.arrival.rate_per_s * 1e9;
      std::vector<SimTime> times(o.live_sessions);
      for (std::uint64_t u = 0; u < o.users; ++u) {
        for (auto& t : times) {
          t = start_ns + static_cast<SimTime>(std::llround(wrng.uniform() * span_ns));
        }
        std::sort(times.begin(), times.end());
        const std::uint32_t first_live = users[u].sessions - o.live_sessions;
        for (std::uint32_t i = 0; i < o.live_sessions; ++i) {
          writes.push_back({times[i], u, first_live + i});
        }
      }
      std::stable_sort(writes.begin(), writes.end(),
                       [](const WriteEvent& a, const WriteEvent& b) { return a.time < b.time; });
    }
    // Popularity: user rank -> user id is a seeded permutation, so hot users are spread over ids.
    by_rank.resize(o.users);
    for (std::uint64_t i = 0; i < o.users; ++i) by_rank[i] = i;
    {
      Rng prng(derive_seed(o.seed, kUserRankStream));
      shuffle(by_rank, prng);
    }
    user_zipf = ZipfTable(o.users, o.user_zipf);
    arrivals =
        PoissonArrivals(start_ns, o.arrival.mode == ArrivalMode::kOpen ? o.arrival.rate_per_s : 1,
                        derive_seed(o.seed, kArrivalStream), o.arrival.cv);
  }

  /// ceil(s * n / S): a user's facts spread evenly over its sessions, in order.
  static std::uint32_t session_begin(const UserState& st, std::uint32_t s) {
    return static_cast<std::uint32_t>((static_cast<std::uint64_t>(s) * st.facts + st.sessions - 1) /
                                      st.sessions);
  }

  TraceRecord& push() {
    if (ready == queue.size()) {
      queue.emplace_back();
      queue_omitted.push_back(0);
    }
    queue_omitted[ready] = omitted;
    ++pushed;
    return queue[ready++];
  }

  void push_fact(std::uint64_t user, std::uint32_t j, std::uint32_t session, SimTime time,
                 bool memory_write) {
    TraceRecord& rec = push();
    rec.kind = memory_write ? RecordKind::kMemoryWrite : RecordKind::kFact;
    FactRecord& f = rec.fact;
    f.id = users[user].first_fact + j;
    f.user = user;
    f.time = time;
    f.text.clear();
    f.source.clear();
    gen.fill(uf, j, session, f);
    ++declared;
  }

  /// The user's facts that exist from the start, at t=0 (uf holds the user).
  void push_static(std::uint64_t u) {
    auto& st = users[u];
    st.dense_static = static_cast<std::uint32_t>(declared);
    const std::uint32_t static_sessions = uf.sessions - o.live_sessions;
    for (std::uint32_t s = 0; s < static_sessions; ++s) {
      for (auto j = uf.session_begin[s]; j < uf.session_begin[s + 1]; ++j) {
        push_fact(u, j, s, 0, false);
      }
    }
  }

  /// Whether this process generates the user's facts, memory writes and requests in full.
  bool kept(std::uint64_t user) const { return !keep_user || keep_user(user); }

  /// Another process's user's static facts: never generated, counted as left out (once).
  void leave_out_static(UserState& st) {
    st.dense_static = kLeftOut;
    omitted += session_begin(st, st.sessions - o.live_sessions);
  }

  void push_write(const WriteEvent& w) {
    auto& st = users[w.user];
    if (!kept(w.user)) {  // another process's user: only what its requests' draws depend on
      if (st.dense_static == kNotDeclared) leave_out_static(st);
      omitted += session_begin(st, w.session + 1) - session_begin(st, w.session);
      st.available = std::max(st.available, session_begin(st, w.session + 1));
      return;
    }
    gen.generate(w.user, uf);
    if (st.dense_static == kNotDeclared) push_static(w.user);
    const std::uint32_t live = w.session - (st.sessions - o.live_sessions);
    live_dense[w.user * o.live_sessions + live] = static_cast<std::uint32_t>(declared);
    for (auto j = uf.session_begin[w.session]; j < uf.session_begin[w.session + 1]; ++j) {
      push_fact(w.user, j, w.session, w.time, true);
    }
    st.available = std::max(st.available, uf.session_begin[w.session + 1]);
  }

  /// Dense index of local fact j of user u (declared).
  std::uint32_t dense_index(std::uint64_t u, std::uint32_t j) const {
    const auto& st = users[u];
    const std::uint32_t first_live = st.sessions - o.live_sessions;
    const std::uint32_t static_end = session_begin(st, first_live);
    if (j < static_end) return st.dense_static + j;
    std::uint32_t s = first_live;
    while (session_begin(st, s + 1) <= j) ++s;
    return live_dense[u * o.live_sessions + (s - first_live)] + (j - session_begin(st, s));
  }

  void push_request() {
    const std::uint64_t i = next_request++;
    const ReplayedRequest* row = o.replay ? &(*o.replay)[i] : nullptr;
    SimTime time = o.arrival.mode == ArrivalMode::kOpen ? arrivals.next() : start_ns;
    if (row != nullptr) {
      time = start_ns + static_cast<SimTime>(std::llround(double(row->time_ns) / o.replay_speedup));
    }
    for (; wi < writes.size() && writes[wi].time <= time; ++wi) push_write(writes[wi]);
    const auto user = by_rank[user_zipf.draw(rng)];
    auto& st = users[user];
    const bool full = kept(user);
    if (st.dense_static == kNotDeclared) {  // lazy: its facts, the first time it asks
      if (full) {
        gen.generate(user, uf);
        push_static(user);
      } else {
        leave_out_static(st);
      }
    }
    TraceRecord& rec = push();
    rec.kind = RecordKind::kRequest;
    RequestRecord& r = rec.request;
    r.time = time;
    r.id = i;
    r.user = user;
    if (row != nullptr) {
      r.query_tokens = std::max<std::uint32_t>(1, row->context_tokens);
      r.output_tokens = std::max<std::uint32_t>(1, row->generated_tokens);
    } else {
      r.query_tokens =
          tokens_for_words(draw_words(rng, o.query_words, o.query_words_sd), o.tokens_per_word);
      r.output_tokens = o.output_tokens;
    }
    r.text.clear();
    r.qa.category = 0;
    r.qa.answer.clear();
    r.qa.evidence.clear();
    // k distinct facts by Zipf over recency rank (rank 0: the newest fact the user has).
    const std::uint32_t n = st.available;
    const std::uint32_t k = std::min(o.k, n);
    if (!full) {
      // Another process's user: the same draws (the sampler takes one uniform a fact), no facts
      // (they were never generated: a process derives only its own users' facts).
      for (std::uint32_t j = 0; j < k; ++j) rng.uniform();
      r.facts.clear();
      return;
    }
    fact_sampler.draw(rng, n, k, chosen);
    r.facts.resize(k);
    for (std::uint32_t j = 0; j < k; ++j) {
      // chosen[0] is the best: listed last. Rank 0 is the newest available fact.
      r.facts[k - 1 - j] = st.first_fact + (n - 1 - chosen[j]);
    }
  }

  /// Fills the queue with the next records; false at the end.
  bool produce() {
    head = ready = 0;
    while (ready == 0) {
      switch (phase) {
        case Phase::kHeader: {
          TraceRecord& rec = push();
          rec.kind = RecordKind::kHeader;
          rec.header = header;
          phase = lazy && !eager_user ? Phase::kRequests : Phase::kStatic;
          next_user = eager_user ? first_eager : 0;
          break;
        }
        case Phase::kStatic:
          if (next_user == o.users) {
            phase = Phase::kRequests;
            if (eager_user) start_records = pushed;
            break;
          }
          if (eager_user && !eager_user(next_user)) {
            // Declared when it first asks or writes, as in a lazy stream.
          } else if (kept(next_user)) {
            gen.generate(next_user, uf);
            push_static(next_user);
          } else {
            leave_out_static(users[next_user]);
          }
          ++next_user;
          break;
        case Phase::kRequests:
          if (next_request == o.requests) {
            phase = Phase::kTail;
            break;
          }
          push_request();
          break;
        case Phase::kTail:
          // Writes after the last request still happen (they can matter to a store's occupancy).
          if (wi == writes.size()) {
            phase = Phase::kDone;
            break;
          }
          push_write(writes[wi++]);
          break;
        case Phase::kDone:
          return false;
      }
    }
    return true;
  }

  bool next(TraceRecord& out) {
    if (head == ready && !produce()) return false;
    omitted_before_last = queue_omitted[head];
    TraceRecord& rec = queue[head++];
    // Only the part of the record its kind uses (a whole record is a header, a fact and a
    // request, strings and vectors included).
    out.kind = rec.kind;
    switch (rec.kind) {
      case RecordKind::kHeader:
        out.header = rec.header;
        break;
      case RecordKind::kFact:
      case RecordKind::kMemoryWrite:
        std::swap(out.fact, rec.fact);
        break;
      case RecordKind::kRequest:
        std::swap(out.request, rec.request);
        break;
    }
    if (out.kind == RecordKind::kRequest) {
      dense.clear();
      const auto u = out.request.user;
      const auto& st = users[u];
      // The user's facts before its live sessions are dense from dense_static on (one division
      // a request, not one a fact).
      const std::uint32_t static_end = session_begin(st, st.sessions - o.live_sessions);
      for (const FactId f : out.request.facts) {
        const auto j = static_cast<std::uint32_t>(f - st.first_fact);
        dense.push_back(j < static_end ? st.dense_static + j : dense_index(u, j));
      }
    }
    return true;
  }
};

SyntheticStream::SyntheticStream(const SyntheticOptions& o, bool lazy_facts,
                                 std::function<bool(std::uint64_t user)> keep_user)
    : impl_(std::make_unique<Impl>(o, lazy_facts)) {
  impl_->keep_user = std::move(keep_user);
}
SyntheticStream::~SyntheticStream() = default;
bool SyntheticStream::next(TraceRecord& out) {
  return impl_->next(out);
}
const TraceHeader& SyntheticStream::header() const {
  return impl_->header;
}
const std::vector<std::uint32_t>& SyntheticStream::request_fact_indices() const {
  return impl_->dense;
}
std::uint32_t SyntheticStream::dense_of(FactId id) const {
  const auto& users = impl_->users;
  if (id >= impl_->population) return kNotDeclared;
  const auto it = std::upper_bound(users.begin(), users.end(), id,
                                   [](FactId f, const UserState& st) { return f < st.first_fact; });
  const auto u = static_cast<std::uint64_t>(it - users.begin()) - 1;
  const auto j = static_cast<std::uint32_t>(id - users[u].first_fact);
  const auto& st = users[u];
  if (st.dense_static == kNotDeclared || st.dense_static == kLeftOut) return kNotDeclared;
  if (j >= st.available) return kNotDeclared;
  return impl_->dense_index(u, j);
}
std::uint64_t SyntheticStream::records_omitted() const {
  return impl_->omitted_before_last;
}
std::uint64_t SyntheticStream::facts_declared() const {
  return impl_->declared;
}
std::uint64_t SyntheticStream::population_facts() const {
  return impl_->population;
}
double SyntheticStream::fraction_read() const {
  const auto& m = *impl_;
  // The users declared at the start, then the requests.
  const bool at_start = !m.lazy || m.eager_user;
  const double users = at_start ? double(m.o.users - m.first_eager) : 0.0;
  const double done_users =
      m.phase == Impl::Phase::kHeader ? 0.0 : double(m.next_user - m.first_eager);
  const double total = double(m.o.requests) + users;
  const double done = double(m.next_request) + (at_start ? done_users : 0.0);
  return total > 0 ? done / total : 1.0;
}

void SyntheticStream::declare_at_start(std::function<bool(std::uint64_t user)> eager,
                                       std::uint64_t first) {
  INFERSCALE_ASSERT(impl_->lazy && impl_->phase == Impl::Phase::kHeader,
                    "declare_at_start on an eager stream, or after its first record");
  impl_->eager_user = std::move(eager);
  impl_->first_eager = std::min(first, impl_->o.users);
}

struct SyntheticUsers::Impl {
  explicit Impl(const SyntheticOptions& opts) : o(clamped(opts)) {}
  const SyntheticOptions o;
  UserGenerator gen{o};
  UserFacts uf;
  std::vector<std::uint32_t> tokens;
};

SyntheticUsers::SyntheticUsers(const SyntheticOptions& o) : impl_(std::make_unique<Impl>(o)) {
  validate_synthetic_options(impl_->o);
}
SyntheticUsers::~SyntheticUsers() = default;
std::uint64_t SyntheticUsers::users() const {
  return impl_->o.users;
}
const std::vector<std::uint32_t>& SyntheticUsers::static_tokens(std::uint64_t user) {
  Impl& m = *impl_;
  m.gen.generate(user, m.uf);
  const std::uint32_t end = m.uf.session_begin[m.uf.sessions - m.o.live_sessions];
  m.tokens.assign(m.uf.tokens.begin(), m.uf.tokens.begin() + end);
  return m.tokens;
}
std::uint64_t SyntheticStream::start_records() const {
  return impl_->start_records;
}
const std::string& SyntheticStream::name() const {
  return impl_->name;
}

SyntheticResult generate_synthetic(const SyntheticOptions& o, TraceWriter& out,
                                   const StreamProgressFn& progress) {
  SyntheticStream stream(o, false);
  const RecordCounts n = copy_records(stream, out, progress);
  return SyntheticResult{n.facts, n.memory_writes, n.requests};
}

}  // namespace inferscale
