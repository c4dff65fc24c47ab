#include "traces/recall.h"

#include <algorithm>
#include <cstdio>

namespace inferscale {

namespace {

bool parse_uint(std::string_view s, std::uint32_t& out) {
  if (s.empty() || s.size() > 9) return false;
  std::uint32_t v = 0;
  for (const char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<std::uint32_t>(c - '0');
  }
  out = v;
  return true;
}

/// "D3:12", "D:3:12" or "D03:012" -> key; false otherwise.
bool parse_one(std::string_view p, DiaKey& key) {
  if (p.empty() || (p[0] != 'D' && p[0] != 'd')) return false;
  p.remove_prefix(1);
  if (!p.empty() && p[0] == ':') p.remove_prefix(1);
  const auto colon = p.find(':');
  if (colon == std::string_view::npos) return false;
  std::uint32_t session = 0, turn = 0;
  if (!parse_uint(p.substr(0, colon), session) || !parse_uint(p.substr(colon + 1), turn)) {
    return false;
  }
  key = make_dia_key(session, turn);
  return true;
}

}  // namespace

std::size_t parse_dia_ids(std::string_view text, std::vector<DiaKey>& out) {
  std::size_t bad = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ',' || text[i] == ';' || text[i] == ' ')) ++i;
    const std::size_t start = i;
    while (i < text.size() && text[i] != ',' && text[i] != ';' && text[i] != ' ') ++i;
    if (i == start) break;
    DiaKey key = 0;
    if (parse_one(text.substr(start, i - start), key)) {
      out.push_back(key);
    } else {
      ++bad;
    }
  }
  return bad;
}

std::string dia_id_string(DiaKey key) {
  std::string s = "D";
  s.append(std::to_string(key >> 32)).append(":").append(std::to_string(key & 0xffffffffu));
  return s;
}

RecallAccumulator::RecallAccumulator(std::vector<std::uint32_t> ks)
    : ks_(std::move(ks)), sum_(ks_.size(), 0.0) {
  for (auto& c : cat_sum_) c.assign(ks_.size(), 0.0);
}

void RecallAccumulator::add(int category, const std::vector<DiaKey>& evidence,
                            const RetrievedSources& retrieved,
                            const std::vector<DiaKey>& available_sorted) {
  if (category < 1 || category > 4 || evidence.empty()) return;
  ev_.assign(evidence.begin(), evidence.end());
  std::sort(ev_.begin(), ev_.end());
  ev_.erase(std::unique(ev_.begin(), ev_.end()), ev_.end());
  best_rank_.assign(ev_.size(), 0);
  available_.assign(ev_.size(), false);
  const auto n = retrieved.facts();
  for (std::size_t i = 0; i < n; ++i) {
    const auto rank = static_cast<std::uint32_t>(n - i);  // best last: the last one is rank 1
    for (auto j = i == 0 ? 0 : retrieved.end[i - 1]; j < retrieved.end[i]; ++j) {
      const auto it = std::lower_bound(ev_.begin(), ev_.end(), retrieved.keys[j]);
      if (it == ev_.end() || *it != retrieved.keys[j]) continue;
      auto& r = best_rank_[static_cast<std::size_t>(it - ev_.begin())];
      if (r == 0 || rank < r) r = rank;
    }
  }
  for (std::size_t i = 0; i < ev_.size(); ++i) {
    available_[i] = std::binary_search(available_sorted.begin(), available_sorted.end(), ev_[i]);
  }
  add_ranks(category, best_rank_, available_);
}

void RecallAccumulator::add_lists(int category, const std::vector<DiaKey>& evidence,
                                  const std::vector<std::vector<DiaKey>>& retrieved,
                                  const std::vector<DiaKey>& available_sorted) {
  RetrievedSources flat;
  for (const auto& r : retrieved) flat.add_fact(r.data(), r.data() + r.size());
  add(category, evidence, flat, available_sorted);
}

void RecallAccumulator::add_ranks(int category, const std::vector<std::uint32_t>& best_rank,
                                  const std::vector<bool>& available) {
  if (best_rank.empty() || category < 1 || category > 4) return;
  const auto c = static_cast<std::size_t>(category);
  const double n = static_cast<double>(best_rank.size());
  ++questions_;
  ++cat_questions_[c];
  evidence_ += best_rank.size();
  for (std::size_t j = 0; j < ks_.size(); ++j) {
    std::size_t hit = 0;
    for (const auto r : best_rank) hit += (r != 0 && r <= ks_[j]) ? 1 : 0;
    sum_[j] += static_cast<double>(hit) / n;
    cat_sum_[c][j] += static_cast<double>(hit) / n;
  }
  std::size_t avail = 0;
  for (const bool a : available) avail += a ? 1 : 0;
  ceiling_sum_ += static_cast<double>(avail) / n;
  cat_ceiling_[c] += static_cast<double>(avail) / n;
}

RecallReport RecallAccumulator::report() const {
  RecallReport r;
  r.ks = ks_;
  r.questions = questions_;
  r.evidence = evidence_;
  const double q = questions_ > 0 ? static_cast<double>(questions_) : 1.0;
  for (const double s : sum_) r.recall.push_back(s / q);
  r.ceiling = ceiling_sum_ / q;
  r.category_questions = cat_questions_;
  for (std::size_t c = 0; c < cat_sum_.size(); ++c) {
    const double cq = cat_questions_[c] > 0 ? static_cast<double>(cat_questions_[c]) : 1.0;
    for (const double s : cat_sum_[c]) r.category_recall[c].push_back(s / cq);
    r.category_ceiling[c] = cat_ceiling_[c] / cq;
  }
  return r;
}

std::string recall_markdown(const RecallReport& r) {
  std::string s = "| k | all (" + std::to_string(r.questions) + " questions)";
  for (int c = 1; c <= 4; ++c) {
    s += " | cat. " + std::to_string(c) + " (" + std::to_string(r.category_questions[c]) + ")";
  }
  s += " |\n|---|---|---|---|---|---|\n";
  char buf[32];
  for (std::size_t j = 0; j < r.ks.size(); ++j) {
    s += "| " + std::to_string(r.ks[j]);
    std::snprintf(buf, sizeof(buf), " | %.3f", r.recall[j]);
    s += buf;
    for (int c = 1; c <= 4; ++c) {
      std::snprintf(buf, sizeof(buf), " | %.3f", r.category_recall[c][j]);
      s += buf;
    }
    s += " |\n";
  }
  std::snprintf(buf, sizeof(buf), "| ceiling | %.3f", r.ceiling);
  s += buf;
  for (int c = 1; c <= 4; ++c) {
    std::snprintf(buf, sizeof(buf), " | %.3f", r.category_ceiling[c]);
    s += buf;
  }
  s += " |\n";
  return s;
}

}  // namespace inferscale
