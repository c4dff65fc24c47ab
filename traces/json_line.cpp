#include "traces/json_line.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

namespace inferscale {

namespace {
constexpr int kMaxDepth = 32;

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

const char* JsonLine::type_name(Type t) {
  switch (t) {
    case Type::kNull: return "null";
    case Type::kBool: return "a boolean";
    case Type::kNumber: return "a number";
    case Type::kString: return "a string";
    case Type::kArray: return "an array";
    case Type::kObject: return "an object";
  }
  return "?";
}

bool JsonLine::fail(const char* what) {
  error_ = what;
  error_column_ = static_cast<std::uint32_t>(p_ + 1);
  return false;
}

void JsonLine::skip_ws() {
  while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\t' || s_[p_] == '\r' || s_[p_] == '\n'))
    ++p_;
}

bool JsonLine::parse(std::string_view line) {
  s_ = line;
  p_ = 0;
  nodes_.clear();
  arena_.clear();
  error_.clear();
  error_column_ = 0;
  nodes_.emplace_back();
  skip_ws();
  if (p_ >= s_.size()) return fail("expected a JSON object, got an empty line");
  if (!value(0, 0)) return false;
  skip_ws();
  if (p_ != s_.size()) return fail("expected end of line after the JSON value");
  return true;
}

std::uint32_t JsonLine::member(const Node& obj, std::string_view name) const {
  for (std::uint32_t c = obj.first_child; c != 0; c = nodes_[c].next_sibling) {
    if (key(nodes_[c]) == name) return c;
  }
  return 0;
}

bool JsonLine::string_into_arena(std::uint32_t& begin, std::uint32_t& len) {
  // at the opening quote
  ++p_;
  begin = static_cast<std::uint32_t>(arena_.size());
  while (true) {
    const std::size_t start = p_;
    while (p_ < s_.size() && s_[p_] != '"' && s_[p_] != '\\' &&
           static_cast<unsigned char>(s_[p_]) >= 0x20)
      ++p_;
    arena_.append(s_.data() + start, p_ - start);
    if (p_ >= s_.size()) return fail("unterminated string (truncated line?)");
    const char c = s_[p_];
    if (c == '"') {
      ++p_;
      break;
    }
    if (c != '\\') return fail("control character inside a string");
    if (p_ + 1 >= s_.size()) return fail("unterminated escape (truncated line?)");
    const char e = s_[p_ + 1];
    p_ += 2;
    switch (e) {
      case '"': arena_ += '"'; break;
      case '\\': arena_ += '\\'; break;
      case '/': arena_ += '/'; break;
      case 'b': arena_ += '\b'; break;
      case 'f': arena_ += '\f'; break;
      case 'n': arena_ += '\n'; break;
      case 'r': arena_ += '\r'; break;
      case 't': arena_ += '\t'; break;
      case 'u': {
        auto read4 = [&](std::uint32_t& cp) {
          if (p_ + 4 > s_.size()) return false;
          cp = 0;
          for (int i = 0; i < 4; ++i) {
            const int d = hex_digit(s_[p_ + i]);
            if (d < 0) return false;
            cp = cp * 16 + static_cast<std::uint32_t>(d);
          }
          p_ += 4;
          return true;
        };
        std::uint32_t cp = 0;
        if (!read4(cp)) return fail("expected 4 hex digits after \\u");
        if (cp >= 0xD800 && cp < 0xDC00 && p_ + 1 < s_.size() && s_[p_] == '\\' &&
            s_[p_ + 1] == 'u') {
          p_ += 2;
          std::uint32_t lo = 0;
          if (!read4(lo)) return fail("expected 4 hex digits after \\u");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        append_utf8(arena_, cp);
        break;
      }
      default: --p_; return fail("invalid escape in string");
    }
  }
  len = static_cast<std::uint32_t>(arena_.size()) - begin;
  return true;
}

bool JsonLine::value(std::uint32_t index, int depth) {
  if (depth > kMaxDepth) return fail("nesting too deep");
  skip_ws();
  if (p_ >= s_.size()) return fail("expected a value (truncated line?)");
  nodes_[index].column = static_cast<std::uint32_t>(p_ + 1);
  const char c = s_[p_];
  if (c == '{' || c == '[') {
    const bool obj = c == '{';
    nodes_[index].type = obj ? Type::kObject : Type::kArray;
    ++p_;
    skip_ws();
    const char close = obj ? '}' : ']';
    if (p_ < s_.size() && s_[p_] == close) {
      ++p_;
      return true;
    }
    std::uint32_t prev = 0;
    while (true) {
      const auto child = static_cast<std::uint32_t>(nodes_.size());
      nodes_.emplace_back();
      if (obj) {
        skip_ws();
        if (p_ >= s_.size()) return fail("expected a key (truncated line?)");
        if (s_[p_] != '"') return fail("expected a quoted key");
        std::uint32_t kb = 0, kl = 0;
        if (!string_into_arena(kb, kl)) return false;
        nodes_[child].key_begin = kb;
        nodes_[child].key_len = kl;
        skip_ws();
        if (p_ >= s_.size() || s_[p_] != ':') return fail("expected ':' after a key");
        ++p_;
      }
      if (!value(child, depth + 1)) return false;
      if (prev == 0) nodes_[index].first_child = child; else nodes_[prev].next_sibling = child;
      prev = child;
      ++nodes_[index].children;
      skip_ws();
      if (p_ >= s_.size()) return fail(obj ? "expected ',' or '}' (truncated line?)"
                                           : "expected ',' or ']' (truncated line?)");
      if (s_[p_] == ',') {
        ++p_;
        continue;
      }
      if (s_[p_] == close) {
        ++p_;
        return true;
      }
      return fail(obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
  }
  if (c == '"') {
    nodes_[index].type = Type::kString;
    std::uint32_t b = 0, l = 0;
    if (!string_into_arena(b, l)) return false;
    nodes_[index].str_begin = b;
    nodes_[index].str_len = l;
    return true;
  }
  if (c == 't' && s_.compare(p_, 4, "true") == 0) {
    nodes_[index].type = Type::kBool;
    nodes_[index].boolean = true;
    p_ += 4;
    return true;
  }
  if (c == 'f' && s_.compare(p_, 5, "false") == 0) {
    nodes_[index].type = Type::kBool;
    p_ += 5;
    return true;
  }
  if (c == 'n' && s_.compare(p_, 4, "null") == 0) {
    nodes_[index].type = Type::kNull;
    p_ += 4;
    return true;
  }
  if (c == '-' || (c >= '0' && c <= '9')) {
    const std::size_t start = p_;
    bool integral = true;
    if (s_[p_] == '-') ++p_;
    // JSON has no leading zeros: "0268435455" is not the number 268435455.
    if (p_ + 1 < s_.size() && s_[p_] == '0' && s_[p_ + 1] >= '0' && s_[p_ + 1] <= '9') {
      p_ = start;
      return fail("malformed number (leading zero)");
    }
    while (p_ < s_.size()) {
      const char d = s_[p_];
      if (d >= '0' && d <= '9') {
        ++p_;
      } else if (d == '.' || d == 'e' || d == 'E' || d == '+' || d == '-') {
        integral = false;
        ++p_;
      } else {
        break;
      }
    }
    Node& n = nodes_[index];
    n.type = Type::kNumber;
    const char* b = s_.data() + start;
    const char* e = s_.data() + p_;
    if (integral) {
      auto [ptr, ec] = std::from_chars(b, e, n.int_value);
      if (ec == std::errc() && ptr == e) {
        n.integral = true;
        n.number = static_cast<double>(n.int_value);
        return true;
      }
    }
    auto [ptr, ec] = std::from_chars(b, e, n.number);
    if (ptr != e || (ec != std::errc() && ec != std::errc::result_out_of_range)) {
      p_ = start;
      return fail("malformed number");
    }
    if (ec == std::errc::result_out_of_range) {
      // from_chars leaves the value unset: an overflow (1e999) is an error, an underflow
      // (1e-999) is as close to zero as a double gets.
      const double v = std::strtod(std::string(b, e).c_str(), nullptr);
      if (std::isinf(v)) {
        p_ = start;
        return fail("number out of range");
      }
      n.number = v;
    }
    n.integral = false;
    return true;
  }
  return fail("expected a value");
}

}  // namespace inferscale
