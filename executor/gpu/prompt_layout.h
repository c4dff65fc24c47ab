#pragma once
// @brief How a request's composed prompt (header + facts + footer + query) is laid out: which
// pieces sit at which composed positions, which are computed by the model in this mode, and
// which computed tokens a prefill chunk covers.

#include <cstdint>
#include <vector>

#include "executor/executor.h"

namespace inferscale {

/// One contiguous piece of a composed prompt.
struct PromptPiece {
  enum class Kind { kHeader, kFact, kFooter, kQuery };
  Kind kind = Kind::kHeader;
  std::uint32_t position = 0;  // composed position of the first token
  std::uint32_t tokens = 0;
  FactId fact = kNoFact;  // kFact only
  bool computed = false;  // goes through the model (text); else injected or private KV
  bool injected = false;  // KV gathered from the pool at the first chunk (cached header,
                          // injected fact)
};

/// The prompt's pieces in position order. Throws std::invalid_argument when they do not tile
/// [0, prompt_tokens) exactly (composed positions must be contiguous) or when the computed
/// pieces do not add up to computed_total.
std::vector<PromptPiece> compose_prompt(const PrefillItem& item,
                                        const std::vector<PromptFact>& prompt_facts);

/// Computed tokens [begin, end) of the computed-token space, as runs of contiguous composed
/// positions (a run may span several pieces).
struct ComputedRun {
  std::uint32_t position = 0;  // composed position of the first token
  std::uint32_t tokens = 0;
  /// Where each token comes from: piece index and offset inside the piece.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> sources;
};
std::vector<ComputedRun> computed_runs(const std::vector<PromptPiece>& pieces, std::uint32_t begin,
                                       std::uint32_t end);

}  // namespace inferscale
