#pragma once
// @brief The Unicode classes of the byte-level pre-tokenizer (letters \p{L}, numbers \p{N},
// white space \s) and UTF-8 decoding that never fails (an invalid byte is its own code point,
// U+FFFD, one byte long).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace inferscale {

struct CodepointRange {
  std::uint32_t first, last;  // inclusive
};

namespace unicode_tables {
extern const CodepointRange kLetters[];
extern const std::size_t kLetters_count;
extern const CodepointRange kNumbers[];
extern const std::size_t kNumbers_count;
}  // namespace unicode_tables

bool unicode_is_letter(std::uint32_t cp);      // general category L*
bool unicode_is_number(std::uint32_t cp);      // general category N*
bool unicode_is_whitespace(std::uint32_t cp);  // the White_Space property

/// The code point at `text[i]` and its length in bytes (1..4); invalid or truncated sequences
/// decode as U+FFFD of length 1.
std::uint32_t utf8_decode(std::string_view text, std::size_t i, std::size_t& length);
/// Appends the UTF-8 encoding of `cp`.
void utf8_append(std::string& out, std::uint32_t cp);

}  // namespace inferscale
