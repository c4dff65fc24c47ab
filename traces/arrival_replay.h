#pragma once
// @brief Arrival traces in the layout of the public Azure LLM inference traces: a CSV with a
// header naming TIMESTAMP, ContextTokens and GeneratedTokens (any order, other columns ignored).
// The generator replays them: row i is request i, at its time since the first row, with its
// token counts (traces/README.md, "Replayed arrivals", says how they map onto users and facts).

#include <cstdint>
#include <string>
#include <vector>

#include "traces/types.h"

namespace inferscale {

struct ReplayedRequest {
  SimTime time_ns = 0;  // since the first row
  std::uint32_t context_tokens = 0;
  std::uint32_t generated_tokens = 0;
};

/// Reads an arrival CSV. TIMESTAMP is "YYYY-MM-DD HH:MM:SS[.fraction]" or seconds (a number);
/// rows must be in time order. InputError at "file:line" for a missing column, a bad value or a
/// row out of order.
std::vector<ReplayedRequest> read_arrival_csv(const std::string& path);

}  // namespace inferscale
