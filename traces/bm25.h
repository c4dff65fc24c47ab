#pragma once
// @brief Bm25Index: the Okapi BM25 retriever the LoCoMo importer uses to rank a user's facts.
//
// Score of document d for query q (Robertson-Walker form, Lucene's non-negative idf):
//
//   score(d, q) = sum over distinct query terms t present in the collection of
//                 idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))
//   idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
//
// N: documents in the index; df(t): documents containing t; tf(t, d): occurrences of t in d;
// |d|: d's length in tokens (after stop words are removed); avgdl: mean |d| over the index.
// k1 = 1.2, b = 0.75 by default. A term repeated in the query counts once.
//
// Tokens: maximal runs of ASCII letters and digits (bytes >= 0x80 also count as letters, so
// UTF-8 words stay whole), ASCII lowercased, minus a small English stop-word list
// (bm25_is_stop_word). No stemming: "dogs" does not match "dog".
//
// Ranking: every document of the index is ranked (score 0 included), higher score first, ties
// broken by document order (the earlier document ranks higher). top_k returns the best
// min(k, N) documents ranked BEST LAST, the order a trace request lists its facts in.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace inferscale {

/// Appends the BM25 tokens of `text` (lowercased, stop words removed) to `out`.
void bm25_tokenize(std::string_view text, std::vector<std::string>& out);
/// True for the stop words BM25 ignores ("the", "what", "did", ...); `word` is lowercase.
bool bm25_is_stop_word(std::string_view word);

struct Bm25Params {
  double k1 = 1.2;
  double b = 0.75;
};

class Bm25Index {
 public:
  explicit Bm25Index(Bm25Params params = {}) : params_(params) {}

  /// Adds a document; its index is the number of documents added before it.
  void add(std::string_view text);
  std::size_t size() const { return doc_length_.size(); }

  /// BM25 score of every document for `query`; `scores` is resized to size().
  void score(std::string_view query, std::vector<double>& scores) const;
  /// The best min(k, size()) document indices, ranked best LAST (ties: earlier document better).
  std::vector<std::uint32_t> top_k(std::string_view query, std::size_t k) const;

 private:
  struct Posting {
    std::uint32_t doc;
    std::uint32_t tf;
  };
  Bm25Params params_;
  std::unordered_map<std::string, std::uint32_t> term_ids_;
  std::vector<std::vector<Posting>> postings_;  // by term id, documents in increasing order
  std::vector<std::uint32_t> doc_length_;       // tokens after stop-word removal
  std::uint64_t total_length_ = 0;
  mutable std::vector<std::string> scratch_;
};

}  // namespace inferscale
