#pragma once
// @brief FactTable: every fact of a run by dense id (the reader's declaration order).

#include <cstdint>
#include <vector>

#include "traces/types.h"

namespace inferscale {

/// What the hot paths read of a fact: 32 bytes, two per cache line (a request's facts are looked
/// up at random in a table of millions).
struct FactInfo {
  UserId user = 0;
  SimTime created = 0;
  SimTime recompute_cost_ns = 0;
  std::uint32_t tokens = 0;
  std::uint32_t encode_context_tokens = 0;  // CWE context for the run's window w
};

/// What a request's admission reads of a fact: 8 bytes, so that a user's facts (declared
/// together) share a few cache lines. FactInfo holds them too.
struct FactTokens {
  std::uint32_t tokens = 0;
  std::uint32_t encode_context_tokens = 0;
};

class FactTable {
 public:
  /// `external`: the id in the trace; `memory_write`: appeared during serving (needs an encode)
  /// rather than memory at start.
  FactId add(const FactInfo& f, FactId external, bool memory_write) {
    facts_.push_back(f);
    tokens_.push_back(FactTokens{f.tokens, f.encode_context_tokens});
    external_.push_back(external);
    memory_write_.push_back(memory_write ? 1 : 0);
    return facts_.size() - 1;
  }
  /// Room for `n` facts: a table that is not copied as it grows (pages never written cost no
  /// memory, so a bound well above the facts declared is cheap).
  void reserve(std::size_t n) {
    facts_.reserve(n);
    tokens_.reserve(n);
    external_.reserve(n);
    memory_write_.reserve(n);
  }
  const FactInfo& operator[](FactId id) const { return facts_[id]; }
  const FactTokens& tokens(FactId id) const { return tokens_[id]; }
  FactId external(FactId id) const { return external_[id]; }
  bool memory_write(FactId id) const { return memory_write_[id] != 0; }
  std::size_t size() const { return facts_.size(); }

 private:
  std::vector<FactInfo> facts_;
  std::vector<FactTokens> tokens_;  // by id, a copy of FactInfo's two fields
  std::vector<FactId> external_;
  std::vector<std::uint8_t> memory_write_;
};

}  // namespace inferscale
