#include "executor/tokenizer/pretokenizer.h"

#include "executor/tokenizer/unicode_classes.h"

namespace inferscale {

namespace {

enum class Cls { kLetter, kNumber, kSpace, kOther };

struct Scanner {
  std::string_view s;
  Cls cls(std::size_t i, std::size_t& len) const {
    const std::uint32_t cp = utf8_decode(s, i, len);
    if (unicode_is_letter(cp)) return Cls::kLetter;
    if (unicode_is_number(cp)) return Cls::kNumber;
    if (unicode_is_whitespace(cp)) return Cls::kSpace;
    return Cls::kOther;
  }
  /// End of the run of code points of class `c` starting at i (i itself if none).
  std::size_t run(std::size_t i, Cls c) const {
    std::size_t len = 0;
    while (i < s.size() && cls(i, len) == c) i += len;
    return i;
  }
  /// End of a run of [^\s\p{L}\p{N}] starting at i.
  std::size_t other_run(std::size_t i) const { return run(i, Cls::kOther); }

  /// Length of the GPT-2 match at i (> 0).
  std::size_t match(std::size_t i) const {
    const std::size_t n = s.size();
    // 's|'t|'re|'ve|'m|'ll|'d
    if (s[i] == '\'' && i + 1 < n) {
      const char a = s[i + 1];
      if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
      if (i + 2 < n) {
        const char b = s[i + 2];
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
      }
    }
    // ' ?' followed by a letter, number or other run
    const std::size_t j = s[i] == ' ' ? i + 1 : i;
    if (j < n) {
      std::size_t len = 0;
      const Cls c = cls(j, len);
      if (c == Cls::kLetter || c == Cls::kNumber) return run(j, c) - i;
      if (c == Cls::kOther) return other_run(j) - i;
    }
    // \s+(?!\S) | \s+
    std::size_t len = 0;
    std::size_t end = i, last = i;  // last: start of the run's last code point
    while (end < n && cls(end, len) == Cls::kSpace) {
      last = end;
      end += len;
    }
    if (end == i) {  // not whitespace either: cannot happen (every class is covered)
      cls(i, len);
      return len;
    }
    if (end == n) return end - i;   // run reaches the end: all of it
    if (last > i) return last - i;  // leave the last space to the next word
    return end - i;                 // a single space before a non-space: \s+
  }
};

void gpt2(std::string_view text, std::vector<std::string_view>& out) {
  Scanner sc{text};
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t len = sc.match(i);
    out.push_back(text.substr(i, len));
    i += len;
  }
}

}  // namespace

void pretokenize(std::string_view text, PreTokenizer kind, std::vector<std::string_view>& out) {
  if (kind == PreTokenizer::kGpt2) {
    gpt2(text, out);
    return;
  }
  std::size_t start = 0, i = 0;
  while (i < text.size()) {
    std::size_t len = 0;
    const std::uint32_t cp = utf8_decode(text, i, len);
    if (unicode_is_number(cp)) {
      if (i > start) gpt2(text.substr(start, i - start), out);
      out.push_back(text.substr(i, len));
      start = i + len;
    }
    i += len;
  }
  if (start < text.size()) gpt2(text.substr(start), out);
}

}  // namespace inferscale
