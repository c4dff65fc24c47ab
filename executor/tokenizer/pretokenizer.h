#pragma once
// @brief Byte-level pre-tokenization: the split of text into the pieces BPE merges within,
// written as a hand scanner (no std::regex: it has no Unicode classes and is slow).
//
// kGpt2 is the GPT-2 pattern, leftmost alternative first at each position:
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// kSmollm (StarCoder / SmolLM tokenizers) first isolates every \p{N} code point as its own
// piece, then applies kGpt2 to the runs between them.

#include <string_view>
#include <vector>

namespace inferscale {

enum class PreTokenizer { kGpt2, kSmollm };

/// Appends the pieces of `text` (views into it, in order, covering it exactly) to `out`.
void pretokenize(std::string_view text, PreTokenizer kind, std::vector<std::string_view>& out);

}  // namespace inferscale
