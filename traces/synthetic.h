#pragma once
// @brief generate_synthetic: a LoCoMo-shaped trace at any scale, streamed, deterministic given
// the seed. Defaults are fitted to LoCoMo (traces/README.md says which numbers and from where).

#include <cstdint>
#include <functional>
#include <memory>

#include "traces/arrival_replay.h"
#include "traces/record_stream.h"
#include "traces/workload.h"
#include "traces/writer.h"

namespace inferscale {

struct SyntheticOptions {
  std::uint64_t users = 1000;
  std::uint64_t requests = 100000;
  // Facts per user: uniform integer in [mean - spread, mean + spread] (LoCoMo: 82..172).
  double facts_per_user = 127;
  double facts_per_user_spread = 45;
  // Words per fact: normal, rounded, clamped to [1, mean + 4 sd] (LoCoMo: 14.8, sd 4.1).
  double fact_words = 14.8;
  double fact_words_sd = 4.1;
  // Sessions per user: uniform integer in [min, max] (LoCoMo: 19..32); a user's facts are
  // spread evenly over its sessions, in order.
  std::uint32_t sessions_min = 19;
  std::uint32_t sessions_max = 32;
  // The last `live_sessions` sessions of each user are memory writes during the run (open loop
  // only), at uniform random times over the expected request span; the rest exist at t=0.
  std::uint32_t live_sessions = 0;
  // Words per question: normal, clamped to [1, mean + 4 sd] (LoCoMo: 10.2, sd 3.1).
  double query_words = 10.2;
  double query_words_sd = 3.1;
  std::uint32_t output_tokens = 50;
  std::uint32_t k = 50;
  double tokens_per_word = 1.3;
  // Popularity: Zipf exponent over users (request -> user) and over a user's facts (recency
  // rank: 1 = the newest fact the user has); 0 = uniform. Fitted to LoCoMo: 0.34 is the
  // rank-frequency slope of its 20 speakers' question counts; 0.8 best matches how BM25 spreads
  // retrievals over a user's facts at k = 10 and 50 (bench/fit_synthetic_defaults.py).
  double user_zipf = 0.34;
  double fact_zipf = 0.8;
  // Context-Window Encoding inputs: context_tokens entries per fact (0: none). Turns per
  // session uniform in [mean/2, 3 mean/2] (LoCoMo: 21.6); words per turn normal (LoCoMo:
  // 22.7, sd 12.6) plus one for the speaker's name.
  std::uint32_t context_turns = 0;
  double turns_per_session = 21.6;
  double turn_words = 22.7;
  double turn_words_sd = 12.6;
  ArrivalOptions arrival{ArrivalMode::kOpen, 100.0, 0, 0.0};
  // Replayed arrivals (traces/arrival_replay.h): request i arrives at row i's time / speedup,
  // with the row's context tokens as its query and its generated tokens as its output; the user
  // and the facts are drawn as without a replay. At most as many requests as rows.
  std::shared_ptr<const std::vector<ReplayedRequest>> replay;
  double replay_speedup = 1;
  double start_s = 0;
  std::uint64_t seed = 1;
};

struct SyntheticResult {
  std::uint64_t facts = 0;
  std::uint64_t memory_writes = 0;
  std::uint64_t requests = 0;
};

/// Checks the options; InputError("--option", what is expected) on a bad value.
void validate_synthetic_options(const SyntheticOptions& o);
/// @brief The generated trace as a stream of records, never written. Eager: the records
/// generate_synthetic writes, in its order. Lazy (`lazy_facts`): a user's facts are derived
/// from (seed, user) and declared (at t=0) just before the user's first request or memory write,
/// so users that never ask cost only their counts; the requests are the same. Memory:
/// O(users + max facts per user), about 40 bytes a user.
class SyntheticStream final : public RecordStream {
 public:
  /// `keep_user` (if set): users whose facts, memory writes and requests come in full; the
  /// others' facts and memory writes are never generated and their requests come without
  /// facts (the same random draws, so every kept record is the same, but dense indices count
  /// kept facts only), for a process that simulates only some users (a partitioned fleet run).
  SyntheticStream(const SyntheticOptions& o, bool lazy_facts,
                  std::function<bool(std::uint64_t user)> keep_user = {});
  ~SyntheticStream() override;
  bool next(TraceRecord& out) override;
  const TraceHeader& header() const override;
  const std::vector<std::uint32_t>& request_fact_indices() const override;
  std::uint32_t dense_of(FactId id) const override;
  std::uint64_t facts_declared() const override;
  std::uint64_t records_omitted() const override;
  std::uint64_t population_facts() const override;
  double fraction_read() const override;
  const std::string& name() const override;
  std::uint64_t start_records() const override;
  /// A lazy stream that declares, at t=0 before its first request, the facts of the users at or
  /// after `first` for which `eager` is true (user by user, as an eager stream does), and the
  /// others' as a lazy stream does: for a warm start that needs only some users' facts in
  /// place (sim/warm_window.h). Before the first next().
  void declare_at_start(std::function<bool(std::uint64_t user)> eager, std::uint64_t first);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// @brief The users of a generated population one at a time, without the trace: what each
/// declares at t=0, derived from (seed, user) as the stream derives it.
class SyntheticUsers {
 public:
  explicit SyntheticUsers(const SyntheticOptions& o);
  ~SyntheticUsers();
  std::uint64_t users() const;
  /// Token counts of the facts `user` declares at t=0 (those of its sessions before the live
  /// ones), in their order; valid until the next call.
  const std::vector<std::uint32_t>& static_tokens(std::uint64_t user);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Writes the trace: header, every user's initial facts at t=0 (user by user), then requests
/// and memory writes in time order (SyntheticStream, eager). Memory: O(users + max facts per
/// user). `progress` (when set) is told how far it is every 65,536 records and at the end.
SyntheticResult generate_synthetic(const SyntheticOptions& o, TraceWriter& out,
                                   const StreamProgressFn& progress = {});

}  // namespace inferscale
