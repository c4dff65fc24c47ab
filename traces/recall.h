#pragma once
// @brief Dialogue-turn ids ("D3:12") and recall@k of retrieved facts against QA evidence.
//
// recall@k of one question = (evidence turns covered by at least one of the k best retrieved
// facts) / (evidence turns); a fact covers the turns listed in its `source`. The report averages
// over questions (each question weighs the same). The ceiling is the same fraction with "any
// fact of the asking user that exists at the request's time" in place of "the k best": the
// best any retriever restricted to that user's facts could do.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace inferscale {

/// A dialogue turn, session and turn number packed: (session << 32) | turn.
using DiaKey = std::uint64_t;

/// Parses one or several dia_ids separated by ',', ';' or spaces ("D1:3", "D1:3, D1:5",
/// "D8:6; D9:17"), tolerating LoCoMo's typos "D:11:26" and "D30:05". Appends the keys of
/// the ids that parse; returns how many pieces did not ("D" alone).
std::size_t parse_dia_ids(std::string_view text, std::vector<DiaKey>& out);
/// Canonical text of a key: "D<session>:<turn>".
std::string dia_id_string(DiaKey key);
inline DiaKey make_dia_key(std::uint32_t session, std::uint32_t turn) {
  return (static_cast<DiaKey>(session) << 32) | turn;
}

/// The k values every recall table reports.
inline constexpr std::array<std::uint32_t, 4> kRecallKs = {5, 10, 20, 50};

struct RecallReport {
  std::vector<std::uint32_t> ks;
  std::uint64_t questions = 0;  // questions with at least one evidence turn
  std::uint64_t evidence = 0;   // evidence turns over those questions
  std::vector<double> recall;   // by ks index: mean over questions
  double ceiling = 0;           // mean over questions
  /// Per category 1..4 (index 0 unused): questions, recall by ks index, ceiling.
  std::array<std::uint64_t, 5> category_questions{};
  std::array<std::vector<double>, 5> category_recall;
  std::array<double, 5> category_ceiling{};
};

/// The sources of a request's retrieved facts, ranked BEST LAST, in one flat buffer.
struct RetrievedSources {
  std::vector<DiaKey> keys;
  std::vector<std::uint32_t> end;  // fact i: keys[i == 0 ? 0 : end[i - 1], end[i])
  void clear() {
    keys.clear();
    end.clear();
  }
  void add_fact(const DiaKey* begin, const DiaKey* stop) {
    keys.insert(keys.end(), begin, stop);
    end.push_back(static_cast<std::uint32_t>(keys.size()));
  }
  std::size_t facts() const { return end.size(); }
};

class RecallAccumulator {
 public:
  explicit RecallAccumulator(std::vector<std::uint32_t> ks = {kRecallKs.begin(), kRecallKs.end()});

  /// One question. `evidence`: its evidence turns (duplicates are ignored); `retrieved`: the
  /// sources of the retrieved facts, ranked BEST LAST; `available_sorted`: the sources of every
  /// fact the user had at the request's time (sorted, for the ceiling). Only categories 1-4
  /// count (5 is adversarial: its evidence does not hold the answer); so do only questions
  /// with evidence.
  void add(int category, const std::vector<DiaKey>& evidence, const RetrievedSources& retrieved,
           const std::vector<DiaKey>& available_sorted);
  /// The same with one vector of sources per retrieved fact.
  void add_lists(int category, const std::vector<DiaKey>& evidence,
                 const std::vector<std::vector<DiaKey>>& retrieved,
                 const std::vector<DiaKey>& available_sorted);
  /// Lower-level form: `best_rank[i]` = 1-based rank (1 = best) of the best retrieved fact
  /// covering evidence turn i, 0 if none; `available[i]`: some fact of the user covers it.
  void add_ranks(int category, const std::vector<std::uint32_t>& best_rank,
                 const std::vector<bool>& available);

  RecallReport report() const;
  std::uint64_t questions() const { return questions_; }

 private:
  std::vector<std::uint32_t> ks_;
  std::uint64_t questions_ = 0, evidence_ = 0;
  std::vector<double> sum_;  // by ks index
  double ceiling_sum_ = 0;
  std::array<std::uint64_t, 5> cat_questions_{};
  std::array<std::vector<double>, 5> cat_sum_;
  std::array<double, 5> cat_ceiling_{};
  std::vector<DiaKey> ev_;  // scratch
  std::vector<std::uint32_t> best_rank_;
  std::vector<bool> available_;
};

/// The recall report as a Markdown table (k, recall over all questions, per category 1-4).
std::string recall_markdown(const RecallReport& r);

}  // namespace inferscale
