#pragma once
// @brief AccessOracle: the future of a trace, for offline policies (Belady). A pre-pass over the
// trace records, for every fact, the ordered trace positions (request index in trace order) of
// the requests naming it. AccessCursor follows one run through the trace and answers
// RunView::next_access in O(1).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "traces/types.h"

namespace inferscale {

class AccessOracle {
 public:
  /// From the requests' facts (dense ids), in trace order: request i is position i.
  explicit AccessOracle(const std::vector<std::vector<FactId>>& requests);
  /// From requests in CSR form: request i names facts[offsets[i] .. offsets[i + 1]).
  static AccessOracle from_csr(std::span<const std::uint64_t> offsets,
                               std::span<const FactId> facts);
  /// Reads the trace at `path` (InputError on a bad trace). Facts are the reader's dense ids
  /// (declaration order), as the simulator numbers them.
  static AccessOracle from_trace(const std::string& path, bool fast_parse = true);

  /// Position of the first request after `after` that names `fact`; kNever if none. O(log n).
  std::int64_t next_after(FactId fact, std::int64_t after) const;
  /// Positions naming `fact`, ascending.
  std::span<const std::uint32_t> positions(FactId fact) const;
  std::size_t fact_count() const { return offsets_.empty() ? 0 : offsets_.size() - 1; }
  std::size_t request_count() const { return requests_; }

 private:
  AccessOracle() = default;
  /// (fact, position) pairs in position order -> CSR.
  void build(std::vector<std::pair<std::uint32_t, std::uint32_t>>& pairs, std::size_t facts);

  std::vector<std::uint64_t> offsets_;    // [facts + 1]
  std::vector<std::uint32_t> positions_;  // [total accesses]
  std::size_t requests_ = 0;
};

/// @brief One run's position in the trace. Call begin_request(i, facts) before processing
/// request i (positions must increase); next_access(f) then answers the next position after i.
class AccessCursor {
 public:
  explicit AccessCursor(const AccessOracle& oracle);
  void begin_request(std::int64_t position, std::span<const FactId> facts);
  /// Next position naming `fact` after the current request; kNever if none.
  std::int64_t next_access(FactId fact) const;
  std::int64_t position() const { return position_; }

 private:
  const AccessOracle& oracle_;
  std::vector<std::uint32_t> seen_;  // by fact: positions consumed so far
  std::int64_t position_ = -1;
};

}  // namespace inferscale
