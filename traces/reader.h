#pragma once
// @brief TraceReader: streams a JSONL trace record by record, validating as it goes.

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "traces/json_line.h"
#include "traces/trace.h"

namespace inferscale {

/// Fact id -> (owner, dense index) for every fact seen so far. Ids that stay dense (below
/// kDenseLimit and below max(kDenseFloor, 4 x the facts so far)) use a vector, others a hash
/// map, so 10^7 facts cost ~12 bytes each and one fact with a huge id costs no more than any.
class FactIndex {
 public:
  static constexpr std::uint32_t kAbsent = 0xffffffffu;
  /// Registers a fact; returns its dense index, or kAbsent if the id exists already.
  std::uint32_t add(FactId id, UserId user);
  /// Dense index of `id`, or kAbsent.
  std::uint32_t find(FactId id) const {
    if (id < dense_.size()) return dense_[id].dense;
    return sparse_.empty() ? kAbsent : find_sparse(id);
  }
  /// Dense index of `id` if it exists and belongs to `user`, else kAbsent; for ids in the dense
  /// table and users below 2^32 one read of 8 bytes.
  std::uint32_t find_owned(FactId id, UserId user) const {
    if (id >= dense_.size()) {
      if (sparse_.empty()) return kAbsent;
      const std::uint32_t d = find_sparse(id);
      return d != kAbsent && owner_[d] == user ? d : kAbsent;
    }
    const Entry e = dense_[id];
    if (e.dense == kAbsent) return kAbsent;
    if (e.owner != kWideOwner) return e.owner == user ? e.dense : kAbsent;
    return owner_[e.dense] == user ? e.dense : kAbsent;
  }
  UserId owner(std::uint32_t dense) const { return owner_[dense]; }
  /// Cache hint for a loop over many ids (find, find_owned).
  void prefetch(FactId id) const {
    if (id < dense_.size()) __builtin_prefetch(dense_.data() + id);
  }
  std::size_t size() const { return owner_.size(); }
  /// Bytes the id tables hold (their capacity), to check that memory follows the facts.
  std::size_t table_bytes() const {
    return dense_.capacity() * sizeof(Entry) + owner_.capacity() * sizeof(UserId) +
           sparse_.size() * (sizeof(FactId) + sizeof(std::uint32_t) + 2 * sizeof(void*)) +
           sparse_.bucket_count() * sizeof(void*);
  }

 private:
  static constexpr FactId kDenseLimit = FactId{1} << 28;
  static constexpr FactId kDenseFloor = FactId{1} << 16;
  std::uint32_t find_sparse(FactId id) const;
  /// Grows the dense table to cover `id` (ids of the hash map it now covers move into it).
  void grow_dense(FactId id);
  /// By id: its dense index and its owner, so that checking a request's fact reads one entry;
  /// kWideOwner for an owner of 2^32 - 1 or more (then owner_ has it).
  struct Entry {
    std::uint32_t dense = kAbsent;
    std::uint32_t owner = 0;
  };
  static constexpr std::uint32_t kWideOwner = 0xffffffffu;
  void put_dense(FactId id, std::uint32_t dense, UserId user) {
    dense_[id] = Entry{dense, user < kWideOwner ? static_cast<std::uint32_t>(user) : kWideOwner};
  }
  std::vector<Entry> dense_;  // by id, for ids < dense_.size()
  std::unordered_map<FactId, std::uint32_t> sparse_;  // ids >= dense_.size()
  std::vector<UserId> owner_;  // by dense index
};

/// @brief Reads a trace; every error is an InputError at file:line:column with what was
/// expected. Memory use is independent of the number of requests.
class TraceReader {
 public:
  /// `fast_parse` false: every line takes the general parser (the `fast_paths` switch, off).
  explicit TraceReader(const std::string& path, bool fast_parse = true);
  /// Next record into `out` (reused); false at end of file.
  bool next(TraceRecord& out);
  /// The header (defaults when the trace has none); valid after the first next().
  const TraceHeader& header() const { return header_; }
  /// Facts seen so far; dense indices follow declaration order.
  const FactIndex& facts() const { return facts_; }
  /// Dense indices of the last request's facts, in the request's order.
  const std::vector<std::uint32_t>& request_fact_indices() const { return dense_facts_; }
  const std::string& path() const { return path_; }
  long line() const { return line_no_; }
  /// Bytes consumed so far (for progress bars).
  std::uint64_t bytes_read() const { return bytes_read_; }
  /// Off: every line through the general parser (same records and errors, slower); for tests
  /// and the differential fuzz target.
  void set_fast_path(bool on) { fast_parse_ = on; }

 private:
  [[noreturn]] void fail(long column, const std::string& message) const;
  /// Reads the next line that is not blank into line_; false at end of file.
  bool next_line();
  /// line_ through a fast path when its start is one the writer emits; false: not parsed.
  bool parse_fast(TraceRecord& out);
  /// line_ through the general parser, which reports any error.
  void parse_general(TraceRecord& out);
  void parse_header(TraceRecord& out);
  void parse_fact(TraceRecord& out, bool memory_write);
  void parse_request(TraceRecord& out);
  // Fast paths for the compact lines TraceWriter emits (traces/reader_fast.cpp); false: use the
  // general parser, which reports any error.
  bool fast_fact(TraceRecord& out);
  bool fast_request(TraceRecord& out);

  std::string path_;
  std::ifstream in_;
  std::string line_;
  long line_no_ = 0;
  std::uint64_t bytes_read_ = 0;
  JsonLine json_;
  TraceHeader header_;
  bool seen_record_ = false;
  bool fast_parse_ = true;
  SimTime last_time_ = 0;
  FactIndex facts_;
  std::vector<std::uint32_t> dense_facts_;
  std::vector<std::int64_t> fast_ints_;
};

}  // namespace inferscale
