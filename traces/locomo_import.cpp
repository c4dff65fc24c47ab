#include "traces/locomo_import.h"

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>

#include "traces/bm25.h"
#include "traces/error.h"

namespace inferscale {

namespace {

constexpr std::uint64_t kArrivalStream = 0xA5A5A5A5ull;

struct UserPlan {
  LocomoUser who;
  FactId first_fact = 0;                 // the user's facts are first_fact + local index
  std::vector<SimTime> fact_time;        // by local index
  std::vector<std::uint32_t> questions;  // indices into the conversation's qa, in asking order
};

struct MemoryWrite {
  SimTime time;
  std::uint64_t user;
  std::uint32_t local;
};

struct PlannedRequest {
  SimTime time;
  std::uint64_t user;
  std::uint32_t qa;
};

/// BM25 over the facts of one (conversation, speaker) that exist at some time: the candidate
/// set is identified by its size because fact times are the same for every replica.
struct CandidateIndex {
  Bm25Index index;
  std::vector<std::uint32_t> local;  // document -> local fact index
  /// Rankings already computed (replicas ask the same questions): qa index -> local fact
  /// indices, best last.
  std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> ranked;
};

}  // namespace

void validate_locomo_options(const LocomoImportOptions& o) {
  if (o.users < 1) throw InputError("--users", "expected at least 1 user");
  if (o.users > (1u << 24)) throw InputError("--users", "expected at most 16777216 users");
  if (o.k < 1) throw InputError("--k", "expected k >= 1");
  if (!(o.tokens_per_word > 0) || o.tokens_per_word > 100) {
    throw InputError("--tokens-per-word", "expected a ratio in (0, 100]");
  }
  if (o.output_tokens < 1) throw InputError("--output-tokens", "expected at least 1");
  if (o.categories.empty()) throw InputError("--categories", "expected at least one category");
  for (const int c : o.categories) {
    if (c < 1 || c > 5) {
      throw InputError("--categories", "expected categories in 1..5, got " + std::to_string(c));
    }
  }
  if (!(o.history_span_s >= 0) || o.history_span_s > 1e9) {
    throw InputError("--history-span-s", "expected seconds in [0, 1e9]");
  }
  if (o.start_s > 1e9) throw InputError("--start-s", "expected seconds in [0, 1e9]");
  if (o.arrival.mode == ArrivalMode::kOpen &&
      (!(o.arrival.rate_per_s > 0) || o.arrival.rate_per_s > 1e9)) {
    throw InputError("--rate", "expected requests per second in (0, 1e9]");
  }
  if (!(o.arrival.think_time_s >= 0) || o.arrival.think_time_s > 1e9) {
    throw InputError("--think-time-s", "expected seconds in [0, 1e9]");
  }
}

LocomoImportResult import_locomo(const LocomoData& data, const LocomoImportOptions& o,
                                 TraceWriter& out) {
  validate_locomo_options(o);
  const std::size_t n_conv = data.conversations.size();
  const SimTime span_ns = seconds_to_ns(o.history_span_s);
  const SimTime start_ns = seconds_to_ns(o.start_s < 0 ? o.history_span_s : o.start_s);
  std::vector<bool> category_on(6, false);
  for (const int c : o.categories) category_on[static_cast<std::size_t>(c)] = true;

  // Per user: facts (ids, times) and questions.
  LocomoImportResult result;
  result.users = o.users;
  std::vector<UserPlan> users(o.users);
  std::vector<MemoryWrite> writes;
  FactId next_fact = 0;
  for (std::uint64_t u = 0; u < o.users; ++u) {
    UserPlan& p = users[u];
    p.who = locomo_user(u, n_conv);
    const auto& conv = data.conversations[p.who.conversation];
    const auto& facts = conv.facts[p.who.speaker];
    p.first_fact = next_fact;
    next_fact += facts.size();
    const double date_span = static_cast<double>(conv.last_date_min - conv.first_date_min);
    for (std::uint32_t j = 0; j < facts.size(); ++j) {
      SimTime t = 0;
      if (date_span > 0 && !o.initial_memory) {
        const double frac =
            static_cast<double>(facts[j].date_min - conv.first_date_min) / date_span;
        t = static_cast<SimTime>(
            std::llround(std::clamp(frac, 0.0, 1.0) * static_cast<double>(span_ns)));
      }
      p.fact_time.push_back(t);
      writes.push_back({t, u, j});
    }
    std::vector<std::uint32_t> eligible;
    for (std::uint32_t q = 0; q < conv.qa.size(); ++q) {
      const auto& item = conv.qa[q];
      if (item.speaker == p.who.speaker && category_on[static_cast<std::size_t>(item.category)]) {
        eligible.push_back(q);
      }
    }
    if (eligible.empty()) {
      ++result.users_without_questions;
    } else if (o.questions_per_user == 0) {
      p.questions = eligible;
    } else {
      Rng rng(derive_seed(o.seed, u));
      shuffle(eligible, rng);
      for (std::uint32_t i = 0; i < o.questions_per_user; ++i) {
        p.questions.push_back(eligible[i % eligible.size()]);
      }
    }
  }
  std::stable_sort(writes.begin(), writes.end(),
                   [](const MemoryWrite& a, const MemoryWrite& b) { return a.time < b.time; });

  // Requests: open loop shuffles all (user, question) pairs and gives them Poisson times;
  // closed loop lists them round-robin over users (each user's in its asking order), all at
  // the start time: the simulator issues a user's next one after the previous answer.
  std::vector<PlannedRequest> requests;
  if (o.arrival.mode == ArrivalMode::kOpen) {
    for (std::uint64_t u = 0; u < o.users; ++u) {
      for (const auto q : users[u].questions) requests.push_back({0, u, q});
    }
    Rng rng(derive_seed(o.seed, kArrivalStream));
    shuffle(requests, rng);
    PoissonArrivals arrivals(start_ns, o.arrival.rate_per_s,
                             derive_seed(o.seed, kArrivalStream + 1), o.arrival.cv);
    for (auto& r : requests) r.time = arrivals.next();
  } else {
    std::size_t rounds = 0;
    for (const auto& p : users) rounds = std::max(rounds, p.questions.size());
    for (std::size_t i = 0; i < rounds; ++i) {
      for (std::uint64_t u = 0; u < o.users; ++u) {
        if (i < users[u].questions.size()) requests.push_back({start_ns, u, users[u].questions[i]});
      }
    }
  }

  TraceHeader h;
  h.source = "locomo";
  h.arrival = o.arrival.mode;
  if (o.arrival.mode == ArrivalMode::kClosedLoop) {
    h.concurrency =
        o.arrival.concurrency > 0 ? o.arrival.concurrency : static_cast<std::uint32_t>(o.users);
    h.think_time_ns = seconds_to_ns(o.arrival.think_time_s);
  }
  h.tokens_per_word = o.tokens_per_word;
  h.k = o.k;
  h.description =
      "LoCoMo: " + std::to_string(n_conv) + " conversations, " + std::to_string(o.users) +
      " users, " +
      (o.questions_per_user == 0 ? std::string("all") : std::to_string(o.questions_per_user)) +
      " questions per user, BM25 top-" + std::to_string(o.k) + ", seed " + std::to_string(o.seed);
  out.write(h);

  // Turn tokens per conversation, for context_tokens.
  std::vector<std::vector<std::uint32_t>> turn_tokens(n_conv);
  for (std::size_t c = 0; c < n_conv; ++c) {
    for (const auto& t : data.conversations[c].turns) {
      turn_tokens[c].push_back(tokens_for_words(t.words, o.tokens_per_word));
    }
  }

  std::map<std::tuple<std::uint32_t, int, std::size_t>, std::unique_ptr<CandidateIndex>> indexes;
  FactRecord f;
  RequestRecord r;
  std::size_t wi = 0, ri = 0;
  RequestId next_request = 0;
  while (wi < writes.size() || ri < requests.size()) {
    if (wi < writes.size() && (ri == requests.size() || writes[wi].time <= requests[ri].time)) {
      const auto& w = writes[wi++];
      const UserPlan& p = users[w.user];
      const auto& fact = data.conversations[p.who.conversation].facts[p.who.speaker][w.local];
      const auto& tt = turn_tokens[p.who.conversation];
      f.id = p.first_fact + w.local;
      f.user = w.user;
      f.tokens = tokens_for_words(fact.words, o.tokens_per_word);
      f.time = w.time;
      f.session = fact.session;
      f.source = fact.source;
      f.text = o.text ? fact.text : std::string();
      f.context_tokens.clear();
      for (std::uint32_t back = 1; back <= fact.anchor_turn && back <= o.max_context_turns;
           ++back) {
        f.context_tokens.push_back(tt[fact.anchor_turn - back]);
      }
      out.write_fact(f, !o.initial_memory);
      ++result.facts;
      continue;
    }
    const auto& pr = requests[ri++];
    const UserPlan& p = users[pr.user];
    const auto& conv = data.conversations[p.who.conversation];
    const auto& item = conv.qa[pr.qa];
    std::size_t n_cand = 0;
    for (const SimTime t : p.fact_time) n_cand += t <= pr.time ? 1 : 0;
    auto& slot = indexes[{p.who.conversation, p.who.speaker, n_cand}];
    if (!slot) {
      slot = std::make_unique<CandidateIndex>();
      const auto& facts = conv.facts[p.who.speaker];
      for (std::uint32_t j = 0; j < facts.size(); ++j) {
        if (p.fact_time[j] > pr.time) continue;
        slot->index.add(facts[j].text);
        slot->local.push_back(j);
      }
    }
    r.id = next_request++;
    r.user = pr.user;
    r.time = pr.time;
    r.query_tokens = tokens_for_words(count_words(item.question), o.tokens_per_word);
    r.output_tokens = o.output_tokens;
    r.facts.clear();
    auto [it, fresh] = slot->ranked.try_emplace(pr.qa);
    if (fresh) {
      for (const auto doc : slot->index.top_k(item.question, o.k)) {
        it->second.push_back(slot->local[doc]);
      }
    }
    for (const auto local : it->second) r.facts.push_back(p.first_fact + local);
    r.text = o.text ? item.question : std::string();
    r.qa.category = item.category;
    r.qa.answer = item.answer;
    r.qa.evidence.clear();
    for (const DiaKey e : item.evidence) r.qa.evidence.push_back(dia_id_string(e));
    out.write(r);
    ++result.requests;
  }
  return result;
}

}  // namespace inferscale
