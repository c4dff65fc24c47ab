#include "executor/tokenizer/bpe_tokenizer.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "executor/tokenizer/unicode_classes.h"

namespace inferscale {

namespace {

std::uint64_t pair_key(std::int32_t a, std::int32_t b) {
  return (std::uint64_t(std::uint32_t(a)) << 32) | std::uint32_t(b);
}

/// bytes_to_unicode: printable Latin-1 bytes map to themselves, the other 68 to 256, 257, ...
std::uint32_t byte_code_point(std::uint8_t b) {
  const auto printable = [](int c) {
    return (c >= 0x21 && c <= 0x7e) || (c >= 0xa1 && c <= 0xac) || (c >= 0xae && c <= 0xff);
  };
  if (printable(b)) return b;
  std::uint32_t n = 0;
  for (int c = 0; c < b; ++c) n += printable(c) ? 0 : 1;
  return 256 + n;
}

}  // namespace

std::string bpe_byte_to_unicode(std::uint8_t byte) {
  std::string s;
  utf8_append(s, byte_code_point(byte));
  return s;
}

BpeTokenizer::BpeTokenizer(std::vector<std::string> tokens, const std::vector<std::string>& merges,
                           const std::vector<std::int64_t>& token_types, PreTokenizer pre)
    : tokens_(std::move(tokens)), pre_(pre) {
  for (std::size_t i = 0; i < tokens_.size(); ++i) ids_.emplace(tokens_[i], std::int32_t(i));
  for (int b = 0; b < 256; ++b) {
    const auto it = ids_.find(bpe_byte_to_unicode(std::uint8_t(b)));
    byte_ids_[b] = it == ids_.end() ? -1 : it->second;
  }
  for (std::size_t r = 0; r < merges.size(); ++r) {
    const std::string& m = merges[r];
    const auto sp = m.find(' ', 1);  // the left part is never empty
    if (sp == std::string::npos) {
      throw std::invalid_argument("merge " + std::to_string(r) + " '" + m + "' has no space");
    }
    const std::string left = m.substr(0, sp), right = m.substr(sp + 1);
    const auto l = ids_.find(left), rr = ids_.find(right), lr = ids_.find(left + right);
    if (l == ids_.end() || rr == ids_.end() || lr == ids_.end()) {
      throw std::invalid_argument("merge " + std::to_string(r) + " '" + m +
                                  "' names a token missing from the vocabulary");
    }
    const std::uint64_t key = pair_key(l->second, rr->second);
    if (ranks_.emplace(key, std::uint32_t(r)).second) merged_.emplace(key, lr->second);
  }
  for (std::size_t i = 0; i < token_types.size() && i < tokens_.size(); ++i) {
    if (token_types[i] == 3 || token_types[i] == 4) specials_.push_back(tokens_[i]);
  }
  for (const std::string& s : specials_) {
    if (!s.empty()) special_first_[std::uint8_t(s[0])] = true;
  }
  std::sort(specials_.begin(), specials_.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
}

void BpeTokenizer::encode_piece(std::string_view piece, std::vector<std::int32_t>& out) const {
  const std::string key(piece);
  const auto hit = cache_.find(key);
  if (hit != cache_.end()) {
    out.insert(out.end(), hit->second.begin(), hit->second.end());
    return;
  }
  std::vector<std::int32_t> sym;
  sym.reserve(piece.size());
  for (unsigned char b : piece) {
    if (byte_ids_[b] < 0) {
      throw std::invalid_argument("vocabulary has no token for byte " + std::to_string(b));
    }
    sym.push_back(byte_ids_[b]);
  }
  // Merge the lowest-ranked adjacent pair (leftmost on ties) until none is in the table.
  while (sym.size() > 1) {
    std::uint32_t best = std::numeric_limits<std::uint32_t>::max();
    std::size_t at = 0;
    for (std::size_t i = 0; i + 1 < sym.size(); ++i) {
      const auto it = ranks_.find(pair_key(sym[i], sym[i + 1]));
      if (it != ranks_.end() && it->second < best) {
        best = it->second;
        at = i;
      }
    }
    if (best == std::numeric_limits<std::uint32_t>::max()) break;
    const std::int32_t a = sym[at], b = sym[at + 1];
    const std::int32_t m = merged_.at(pair_key(a, b));
    // Apply this merge to every occurrence, left to right (as BPE does for one rank).
    std::vector<std::int32_t> next;
    next.reserve(sym.size());
    for (std::size_t i = 0; i < sym.size(); ++i) {
      if (i + 1 < sym.size() && sym[i] == a && sym[i + 1] == b) {
        next.push_back(m);
        ++i;
      } else {
        next.push_back(sym[i]);
      }
    }
    sym.swap(next);
  }
  if (cache_.size() < 200000) cache_.emplace(key, sym);
  out.insert(out.end(), sym.begin(), sym.end());
}

std::vector<std::int32_t> BpeTokenizer::encode(std::string_view text, bool special) const {
  std::vector<std::int32_t> out;
  std::vector<std::string_view> pieces;
  auto plain = [&](std::string_view part) {
    pieces.clear();
    pretokenize(part, pre_, pieces);
    for (std::string_view p : pieces) encode_piece(p, out);
  };
  std::size_t start = 0, i = 0;
  while (special && i < text.size()) {
    const std::string* hit = nullptr;
    if (special_first_[std::uint8_t(text[i])]) {
      for (const std::string& s : specials_) {
        if (text.compare(i, s.size(), s) == 0) {
          hit = &s;
          break;
        }
      }
    }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    if (i > start) plain(text.substr(start, i - start));
    out.push_back(ids_.at(*hit));
    i += hit->size();
    start = i;
  }
  if (start < text.size()) plain(text.substr(start));
  return out;
}

std::string BpeTokenizer::token_text(std::int32_t id) const {
  if (id < 0 || std::size_t(id) >= tokens_.size()) {
    throw std::out_of_range("token id " + std::to_string(id) + " out of range");
  }
  const std::string& t = tokens_[std::size_t(id)];
  if (std::find(specials_.begin(), specials_.end(), t) != specials_.end()) return t;
  // Map code points back to bytes; a code point outside the byte map is kept as UTF-8.
  static const auto inverse = [] {
    std::unordered_map<std::uint32_t, std::uint8_t> m;
    for (int b = 0; b < 256; ++b) m[byte_code_point(std::uint8_t(b))] = std::uint8_t(b);
    return m;
  }();
  std::string out;
  for (std::size_t i = 0; i < t.size();) {
    std::size_t len = 0;
    const std::uint32_t cp = utf8_decode(t, i, len);
    const auto it = inverse.find(cp);
    if (it != inverse.end()) {
      out += char(it->second);
    } else {
      out.append(t, i, len);
    }
    i += len;
  }
  return out;
}

std::string BpeTokenizer::decode(const std::vector<std::int32_t>& ids) const {
  std::string out;
  for (std::int32_t id : ids) out += token_text(id);
  return out;
}

std::int32_t BpeTokenizer::token_id(std::string_view token) const {
  const auto it = ids_.find(std::string(token));
  return it == ids_.end() ? -1 : it->second;
}

}  // namespace inferscale
