#include "executor/tokenizer/unicode_classes.h"

#include <algorithm>

namespace inferscale {

namespace {

bool in_ranges(const CodepointRange* r, std::size_t n, std::uint32_t cp) {
  const CodepointRange* end = r + n;
  const CodepointRange* it = std::upper_bound(
      r, end, cp, [](std::uint32_t c, const CodepointRange& x) { return c < x.first; });
  return it != r && cp <= (it - 1)->last;
}

}  // namespace

bool unicode_is_letter(std::uint32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  return in_ranges(unicode_tables::kLetters, unicode_tables::kLetters_count, cp);
}

bool unicode_is_number(std::uint32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return in_ranges(unicode_tables::kNumbers, unicode_tables::kNumbers_count, cp);
}

bool unicode_is_whitespace(std::uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0d) || cp == 0x20 || cp == 0x85 || cp == 0xa0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f ||
         cp == 0x205f || cp == 0x3000;
}

std::uint32_t utf8_decode(std::string_view s, std::size_t i, std::size_t& length) {
  const auto b = [&](std::size_t j) { return std::uint8_t(s[j]); };
  const std::uint8_t c = b(i);
  length = 1;
  if (c < 0x80) return c;
  std::size_t n = 0;
  std::uint32_t cp = 0, min = 0;
  if ((c & 0xe0) == 0xc0) {
    n = 2, cp = c & 0x1f, min = 0x80;
  } else if ((c & 0xf0) == 0xe0) {
    n = 3, cp = c & 0x0f, min = 0x800;
  } else if ((c & 0xf8) == 0xf0) {
    n = 4, cp = c & 0x07, min = 0x10000;
  } else {
    return 0xfffd;
  }
  if (i + n > s.size()) return 0xfffd;
  for (std::size_t j = 1; j < n; ++j) {
    if ((b(i + j) & 0xc0) != 0x80) return 0xfffd;
    cp = (cp << 6) | (b(i + j) & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0xfffd;
  length = n;
  return cp;
}

void utf8_append(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xc0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += char(0xe0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3f));
    out += char(0x80 | (cp & 0x3f));
  } else {
    out += char(0xf0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3f));
    out += char(0x80 | ((cp >> 6) & 0x3f));
    out += char(0x80 | (cp & 0x3f));
  }
}

}  // namespace inferscale
