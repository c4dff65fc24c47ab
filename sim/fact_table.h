#pragma once
// @brief FactTable: every fact of a run by dense id (the reader's declaration order).

#include <cstdint>
#include <vector>

#include "traces/types.h"

namespace inferscale {

struct FactInfo {
  FactId external = 0;       // id in the trace
  UserId user = 0;
  std::uint32_t tokens = 0;
  std::uint32_t encode_context_tokens = 0;  // CWE context for the run's window w
  SimTime created = 0;
  SimTime recompute_cost_ns = 0;
  bool memory_write = false;  // appeared during serving (needs an encode) vs memory at start
};

class FactTable {
 public:
  FactId add(const FactInfo& f) {
    facts_.push_back(f);
    return facts_.size() - 1;
  }
  const FactInfo& operator[](FactId id) const { return facts_[id]; }
  FactInfo& operator[](FactId id) { return facts_[id]; }
  std::size_t size() const { return facts_.size(); }

 private:
  std::vector<FactInfo> facts_;
};

}  // namespace inferscale
