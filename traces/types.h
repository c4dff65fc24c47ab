#pragma once
// @brief The vocabulary shared by every folder: ids and virtual time.

#include <cstdint>
#include <limits>

namespace inferscale {

/// Virtual nanoseconds. Never wall-clock time inside sim/.
using SimTime = std::int64_t;
using FactId = std::uint64_t;
using UserId = std::uint64_t;
using RequestId = std::uint64_t;

inline constexpr SimTime kNsPerUs = 1'000;
inline constexpr SimTime kNsPerMs = 1'000'000;
inline constexpr SimTime kNsPerS = 1'000'000'000;
inline constexpr FactId kNoFact = std::numeric_limits<FactId>::max();

/// Tokens per paged-KV block (vLLM's default).
inline constexpr std::uint32_t kBlockTokens = 16;
/// Blocks that hold `tokens` tokens.
inline constexpr std::uint64_t blocks_of(std::uint64_t tokens) {
  return (tokens + kBlockTokens - 1) / kBlockTokens;
}

}  // namespace inferscale
