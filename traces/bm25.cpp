#include "traces/bm25.h"

#include <algorithm>
#include <cmath>

namespace inferscale {

namespace {

// Function words that carry no topic: articles, pronouns, auxiliaries, question words and the
// fragments left by apostrophes ("Caroline's" -> "caroline", "s"). Sorted for binary search.
constexpr std::string_view kStopWords[] = {
    "a",    "am",    "an",    "and",   "are",  "as",    "at",    "be",    "been",  "being",
    "but",  "by",    "can",   "could", "d",    "did",   "do",    "does",  "for",   "from",
    "had",  "has",   "have",  "he",    "her",  "hers",  "him",   "his",   "how",   "i",
    "if",   "in",    "into",  "is",    "it",   "its",   "ll",    "m",     "me",    "my",
    "of",   "on",    "or",    "our",   "re",   "s",     "she",   "so",    "t",     "than",
    "that", "the",   "their", "them",  "then", "there", "these", "they",  "this",  "those",
    "to",   "ve",    "was",   "we",    "were", "what",  "when",  "where", "which", "who",
    "whom", "whose", "why",   "will",  "with", "would", "you",   "your",  "yours"};

std::vector<std::string_view> sorted_stop_words() {
  std::vector<std::string_view> v(std::begin(kStopWords), std::end(kStopWords));
  std::sort(v.begin(), v.end());
  return v;
}

bool is_word_byte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80;
}

}  // namespace

bool bm25_is_stop_word(std::string_view word) {
  static const std::vector<std::string_view> sorted = sorted_stop_words();
  return std::binary_search(sorted.begin(), sorted.end(), word);
}

void bm25_tokenize(std::string_view text, std::vector<std::string>& out) {
  std::string token;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && !is_word_byte(static_cast<unsigned char>(text[i]))) ++i;
    token.clear();
    while (i < text.size() && is_word_byte(static_cast<unsigned char>(text[i]))) {
      char c = text[i++];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      token += c;
    }
    if (!token.empty() && !bm25_is_stop_word(token)) out.push_back(token);
  }
}

void Bm25Index::add(std::string_view text) {
  const auto doc = static_cast<std::uint32_t>(doc_length_.size());
  scratch_.clear();
  bm25_tokenize(text, scratch_);
  for (const auto& t : scratch_) {
    auto [it, inserted] = term_ids_.try_emplace(t, static_cast<std::uint32_t>(postings_.size()));
    if (inserted) postings_.emplace_back();
    auto& list = postings_[it->second];
    if (list.empty() || list.back().doc != doc) {
      list.push_back({doc, 1});
    } else {
      ++list.back().tf;
    }
  }
  doc_length_.push_back(static_cast<std::uint32_t>(scratch_.size()));
  total_length_ += scratch_.size();
}

void Bm25Index::score(std::string_view query, std::vector<double>& scores) const {
  scores.assign(size(), 0.0);
  if (size() == 0) return;
  const double n = static_cast<double>(size());
  const double avgdl = static_cast<double>(total_length_) / n;
  scratch_.clear();
  bm25_tokenize(query, scratch_);
  std::vector<std::uint32_t> seen;
  for (const auto& t : scratch_) {
    const auto it = term_ids_.find(t);
    if (it == term_ids_.end()) continue;
    if (std::find(seen.begin(), seen.end(), it->second) != seen.end()) continue;
    seen.push_back(it->second);
    const auto& list = postings_[it->second];
    const double df = static_cast<double>(list.size());
    const double idf = std::log(1.0 + (n - df + 0.5) / (df + 0.5));
    for (const auto& p : list) {
      const double tf = p.tf;
      const double norm = params_.k1 * (1.0 - params_.b + params_.b * doc_length_[p.doc] / avgdl);
      scores[p.doc] += idf * tf * (params_.k1 + 1.0) / (tf + norm);
    }
  }
}

std::vector<std::uint32_t> Bm25Index::top_k(std::string_view query, std::size_t k) const {
  std::vector<double> scores;
  score(query, scores);
  std::vector<std::uint32_t> order(size());
  for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  const std::size_t m = std::min(k, order.size());
  const auto better = [&](std::uint32_t a, std::uint32_t b) {
    return scores[a] != scores[b] ? scores[a] > scores[b] : a < b;
  };
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(m), order.end(),
                    better);
  order.resize(m);
  std::reverse(order.begin(), order.end());
  return order;
}

}  // namespace inferscale
