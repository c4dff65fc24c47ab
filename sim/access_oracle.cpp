#include "sim/access_oracle.h"

#include <algorithm>

#include "policies/policy.h"
#include "traces/record_stream.h"

namespace inferscale {

void AccessOracle::build(std::vector<std::pair<std::uint32_t, std::uint32_t>>& pairs,
                         std::size_t facts) {
  offsets_.assign(facts + 1, 0);
  for (const auto& [f, pos] : pairs) ++offsets_[f + 1];
  for (std::size_t f = 0; f < facts; ++f) offsets_[f + 1] += offsets_[f];
  positions_.resize(pairs.size());
  std::vector<std::uint64_t> fill(offsets_.begin(), offsets_.end() - 1);
  for (const auto& [f, pos] : pairs) positions_[fill[f]++] = pos;  // pairs are in position order
  // A request naming a fact twice counts once.
  std::vector<std::uint32_t> compact;
  compact.reserve(positions_.size());
  std::vector<std::uint64_t> new_offsets(facts + 1, 0);
  for (std::size_t f = 0; f < facts; ++f) {
    for (auto i = offsets_[f]; i < offsets_[f + 1]; ++i) {
      if (i == offsets_[f] || positions_[i] != positions_[i - 1]) compact.push_back(positions_[i]);
    }
    new_offsets[f + 1] = compact.size();
  }
  positions_.swap(compact);
  offsets_.swap(new_offsets);
}

AccessOracle::AccessOracle(const std::vector<std::vector<FactId>>& requests) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;
  std::size_t facts = 0;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    for (FactId f : requests[i]) {
      pairs.emplace_back(static_cast<std::uint32_t>(f), static_cast<std::uint32_t>(i));
      facts = std::max<std::size_t>(facts, f + 1);
    }
  }
  requests_ = requests.size();
  build(pairs, facts);
}

AccessOracle AccessOracle::from_csr(std::span<const std::uint64_t> offsets,
                                    std::span<const FactId> facts) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;
  pairs.reserve(facts.size());
  std::size_t fact_count = 0;
  for (std::size_t i = 0; i + 1 < offsets.size(); ++i) {
    for (auto j = offsets[i]; j < offsets[i + 1]; ++j) {
      pairs.emplace_back(static_cast<std::uint32_t>(facts[j]), static_cast<std::uint32_t>(i));
      fact_count = std::max<std::size_t>(fact_count, facts[j] + 1);
    }
  }
  AccessOracle o;
  o.requests_ = offsets.empty() ? 0 : offsets.size() - 1;
  o.build(pairs, fact_count);
  return o;
}

AccessOracle AccessOracle::from_trace(const std::string& path, bool fast_parse) {
  const auto stream = open_trace(path, fast_parse);
  RecordStream& reader = *stream;
  TraceRecord rec;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;
  std::uint32_t position = 0;
  while (reader.next(rec)) {
    if (rec.kind != RecordKind::kRequest) continue;
    for (std::uint32_t f : reader.request_fact_indices()) pairs.emplace_back(f, position);
    ++position;
  }
  AccessOracle o;
  o.requests_ = position;
  o.build(pairs, reader.facts_declared());
  return o;
}

std::span<const std::uint32_t> AccessOracle::positions(FactId fact) const {
  if (fact + 1 >= offsets_.size()) return {};
  return {positions_.data() + offsets_[fact], positions_.data() + offsets_[fact + 1]};
}

std::int64_t AccessOracle::next_after(FactId fact, std::int64_t after) const {
  const auto p = positions(fact);
  const auto it = std::upper_bound(p.begin(), p.end(), after,
                                   [](std::int64_t a, std::uint32_t v) { return a < v; });
  return it == p.end() ? kNever : std::int64_t{*it};
}

AccessCursor::AccessCursor(const AccessOracle& oracle)
    : oracle_(oracle), seen_(oracle.fact_count(), 0) {}

void AccessCursor::begin_request(std::int64_t position, std::span<const FactId> facts) {
  position_ = position;
  for (FactId f : facts) {
    const auto p = oracle_.positions(f);
    auto& s = seen_[f];
    while (s < p.size() && std::int64_t{p[s]} <= position) ++s;
  }
}

std::int64_t AccessCursor::next_access(FactId fact) const {
  const auto p = oracle_.positions(fact);
  if (fact >= seen_.size()) return kNever;
  const auto s = seen_[fact];
  return s < p.size() ? std::int64_t{p[s]} : kNever;
}

}  // namespace inferscale
