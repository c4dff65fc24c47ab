// The reader's fast path: fact and request lines in the compact form TraceWriter emits (any key
// order; no whitespace, escapes or nested objects) are parsed in one pass without building a
// JSON tree. Anything else, and any line that would be an error, goes to the general parser,
// which accepts the same records and reports the precise error; so the fast path changes speed,
// never results.
#include <bit>
#include <charconv>
#include <cstring>
#include <limits>

#include "traces/reader.h"

namespace inferscale {

namespace {

constexpr std::int64_t kMaxId = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMaxTokens = 1 << 24;

/// A cursor over one line; every method returns false on anything it does not expect.
struct Cursor {
  const char* p;
  const char* end;

  bool eat(char c) {
    if (p == end || *p != c) return false;
    ++p;
    return true;
  }
  /// The characters of `s` next (a fixed piece of a line as TraceWriter writes it).
  bool literal(std::string_view s) {
    if (static_cast<std::size_t>(end - p) < s.size() || std::memcmp(p, s.data(), s.size()) != 0) {
      return false;
    }
    p += s.size();
    return true;
  }
  bool key(std::string_view& k) {
    if (!eat('"')) return false;
    const char* b = p;
    while (p != end && *p != '"' && *p != '\\') ++p;
    if (p == end || *p != '"') return false;
    k = std::string_view(b, static_cast<std::size_t>(p - b));
    ++p;
    return eat(':');
  }
  /// What std::from_chars accepts for a non-negative `lo`, digit by digit: up to 18 digits
  /// cannot overflow; longer runs of digits go to from_chars.
  bool integer(std::int64_t& v, std::int64_t lo, std::int64_t hi) {
    if (leading_zero()) return false;
    if (end - p >= 8 && short_integer(v)) return v >= lo && v <= hi;
    const char* q = p;
    std::uint64_t x = 0;
    while (q != end && q - p < 18 && static_cast<unsigned char>(*q - '0') < 10) {
      x = x * 10 + static_cast<unsigned>(*q - '0');
      ++q;
    }
    if (q == p) return false;
    if (q != end && static_cast<unsigned char>(*q - '0') < 10) {
      auto [r, ec] = std::from_chars(p, end, v);
      if (ec != std::errc()) return false;
      q = r;
    } else {
      v = static_cast<std::int64_t>(x);
    }
    if (q != end && (*q == '.' || *q == 'e' || *q == 'E')) return false;
    p = q;
    return v >= lo && v <= hi;
  }
  /// A '0' followed by a digit: not JSON (the general parser says so).
  bool leading_zero() const {
    return end - p >= 2 && p[0] == '0' && static_cast<unsigned char>(p[1] - '0') < 10;
  }
  /// 1 to 7 digits followed by a character that ends a number, read 8 bytes at a time (a
  /// request line is mostly fact ids); false, consuming nothing, for anything else.
  bool short_integer(std::int64_t& v) {
    if constexpr (std::endian::native != std::endian::little) return false;
    std::uint64_t w;
    int n;
    if (!short_digits(w, n)) return false;
    const char after = p[n];
    if (after == '.' || after == 'e' || after == 'E') return false;
    v = static_cast<std::int64_t>(digits_value(w, n));
    p += n;
    return true;
  }
  /// The 8 bytes at p (8 available) in `w`, p[0] in the low byte, and in `n` the count of
  /// digits they start with; false unless 1 to 7.
  bool short_digits(std::uint64_t& w, int& n) const {
    std::memcpy(&w, p, 8);
    constexpr std::uint64_t kHigh = 0xF0F0F0F0F0F0F0F0ull, kZeros = 0x3030303030303030ull;
    // Nonzero bytes: not a digit ('0'..'9' are 0x30..0x39: high nibble 3, and 3 after + 6).
    // A carry out of a byte only reaches later ones, past the first non-digit.
    const std::uint64_t other =
        ((w & kHigh) ^ kZeros) | (((w + 0x0606060606060606ull) & kHigh) ^ kZeros);
    if (other == 0) return false;  // 8 digits or more: the general loop
    n = __builtin_ctzll(other) / 8;
    return n != 0;
  }
  /// The value of short_digits' `n` digits in `w`.
  static std::uint64_t digits_value(std::uint64_t w, int n) {
    // The digits to the high bytes (leading zeros below), then pairs, quads, eight.
    std::uint64_t d = (w - 0x3030303030303030ull) << (8 * (8 - n));
    d = (d * 10 + (d >> 8)) & 0x00FF00FF00FF00FFull;
    d = (d * 100 + (d >> 16)) & 0x0000FFFF0000FFFFull;
    d = (d * 10000 + (d >> 32)) & 0x00000000FFFFFFFFull;
    return d;
  }
  /// A plain string: no escapes, no control characters.
  bool string(std::string_view& s) {
    if (!eat('"')) return false;
    const char* b = p;
    while (p != end && *p != '"' && *p != '\\' && static_cast<unsigned char>(*p) >= 0x20) ++p;
    if (p == end || *p != '"') return false;
    s = std::string_view(b, static_cast<std::size_t>(p - b));
    ++p;
    return true;
  }
  template <class F>
  bool int_array(std::int64_t lo, std::int64_t hi, F&& each) {
    if (!eat('[')) return false;
    if (eat(']')) return true;
    while (true) {
      std::int64_t v = 0;
      if (!integer(v, lo, hi)) return false;
      each(v);
      if (eat(']')) return true;
      if (!eat(',')) return false;
    }
  }
  /// int_array of ids (0..kMaxId) appended to `out`, in one loop: a request line is mostly
  /// these.
  bool id_array(std::vector<FactId>& out) {
    if (!eat('[')) return false;
    if (eat(']')) return true;
    while (true) {
      // 1 to 7 digits (in range) and the separator after them, read at once; anything else
      // (more digits, a number that goes on, too few bytes left) as integer() reads it.
      std::uint64_t w;
      int n;
      if (std::endian::native == std::endian::little && end - p >= 8 && !leading_zero() &&
          short_digits(w, n) && (p[n] == ',' || p[n] == ']')) {
        out.push_back(static_cast<FactId>(digits_value(w, n)));
        const char sep = p[n];
        p += n + 1;
        if (sep == ']') return true;
        continue;
      }
      std::int64_t v = 0;
      if (!integer(v, 0, kMaxId)) return false;
      out.push_back(static_cast<FactId>(v));
      if (p == end) return false;
      const char sep = *p++;
      if (sep == ']') return true;
      if (sep != ',') return false;
    }
  }
  /// After a value: ',' (more) or '}' (done, at end of line).
  bool next(bool& done) {
    if (eat(',')) return true;
    if (eat('}')) {
      done = p == end;
      return done;
    }
    return false;
  }
};

/// True the first time a line names `key` as `name`: a repeated key is for the general parser.
bool first(std::string_view key, std::string_view name, bool& seen) {
  if (key != name || seen) return false;
  seen = true;
  return true;
}

}  // namespace

bool TraceReader::fast_fact(TraceRecord& out) {
  Cursor c{line_.data(), line_.data() + line_.size()};
  FactRecord& r = out.fact;
  bool memory_write = false;
  bool has_id = false, has_user = false, has_tokens = false, has_time = false, has_type = false;
  bool has_text = false, has_source = false, has_session = false, has_ctx = false;
  std::int64_t id = 0, user = 0, tokens = 0, time = last_time_, session = -1;
  std::string_view text, source;
  fast_ints_.clear();
  bool done = false;
  // TraceWriter's order first, fixed keys compared whole; the loop below takes what follows
  // (or, when the line starts otherwise, the whole line).
  const bool is_fact = c.literal(R"({"type":"fact","id":)");
  if ((is_fact || c.literal(R"({"type":"memory_write","id":)")) && c.integer(id, 0, kMaxId) &&
      c.literal(R"(,"user":)") && c.integer(user, 0, kMaxId) && c.literal(R"(,"tokens":)") &&
      c.integer(tokens, 1, kMaxTokens) && c.literal(R"(,"time":)") && c.integer(time, 0, kMaxId)) {
    memory_write = !is_fact;
    has_type = has_id = has_user = has_tokens = has_time = true;
    if (!c.next(done)) return false;
  } else {
    c.p = line_.data();
    memory_write = false;
    id = user = tokens = 0;
    time = last_time_;
    if (!c.eat('{')) return false;
  }
  while (!done) {
    std::string_view k;
    if (!c.key(k)) return false;
    bool ok = false;
    if (first(k, "type", has_type)) {
      std::string_view t;
      ok = c.string(t) && (t == "fact" || t == "memory_write");
      memory_write = t == "memory_write";
    } else if (first(k, "id", has_id)) {
      ok = c.integer(id, 0, kMaxId);
    } else if (first(k, "user", has_user)) {
      ok = c.integer(user, 0, kMaxId);
    } else if (first(k, "tokens", has_tokens)) {
      ok = c.integer(tokens, 1, kMaxTokens);
    } else if (first(k, "time", has_time)) {
      ok = c.integer(time, 0, kMaxId);
    } else if (first(k, "session", has_session)) {
      ok = c.integer(session, 0, 1 << 30);
    } else if (first(k, "text", has_text)) {
      ok = c.string(text);
    } else if (first(k, "source", has_source)) {
      ok = c.string(source);
    } else if (first(k, "context_tokens", has_ctx)) {
      ok = c.int_array(0, kMaxTokens, [&](std::int64_t v) { fast_ints_.push_back(v); });
    }
    if (!ok || !c.next(done)) return false;
  }
  if (!has_type || !has_id || !has_user || !has_tokens || (memory_write && !has_time)) {
    return false;
  }
  if (time < last_time_) return false;
  if (facts_.find(static_cast<FactId>(id)) != FactIndex::kAbsent) return false;
  facts_.add(static_cast<FactId>(id), static_cast<UserId>(user));
  last_time_ = time;
  r.id = static_cast<FactId>(id);
  r.user = static_cast<UserId>(user);
  r.tokens = static_cast<std::uint32_t>(tokens);
  r.time = time;
  r.text.assign(text);
  r.source.assign(source);
  r.session = static_cast<std::int32_t>(session);
  r.context_tokens.assign(fast_ints_.begin(), fast_ints_.end());
  out.kind = memory_write ? RecordKind::kMemoryWrite : RecordKind::kFact;
  return true;
}

bool TraceReader::fast_request(TraceRecord& out) {
  Cursor c{line_.data(), line_.data() + line_.size()};
  RequestRecord& r = out.request;
  bool has_type = false, has_id = false, has_user = false, has_time = false, has_query = false,
       has_output = false, has_facts = false, has_text = false;
  std::int64_t id = 0, user = 0, time = 0, query = 0, output = 0;
  std::string_view text;
  fast_ints_.clear();
  bool done = false;
  // TraceWriter's order first, as in fast_fact.
  r.facts.clear();
  if (c.literal(R"({"type":"request","id":)") && c.integer(id, 0, kMaxId) &&
      c.literal(R"(,"user":)") && c.integer(user, 0, kMaxId) && c.literal(R"(,"time":)") &&
      c.integer(time, 0, kMaxId) && c.literal(R"(,"query_tokens":)") &&
      c.integer(query, 1, kMaxTokens) && c.literal(R"(,"output_tokens":)") &&
      c.integer(output, 1, kMaxTokens) && c.literal(R"(,"facts":)") && c.id_array(r.facts)) {
    has_type = has_id = has_user = has_time = has_query = has_output = has_facts = true;
    if (!c.next(done)) return false;
  } else {
    c.p = line_.data();
    id = user = time = query = output = 0;
    if (!c.eat('{')) return false;
  }
  while (!done) {
    std::string_view k;
    if (!c.key(k)) return false;
    bool ok = false;
    if (first(k, "type", has_type)) {
      std::string_view t;
      ok = c.string(t) && t == "request";
    } else if (first(k, "id", has_id)) {
      ok = c.integer(id, 0, kMaxId);
    } else if (first(k, "user", has_user)) {
      ok = c.integer(user, 0, kMaxId);
    } else if (first(k, "time", has_time)) {
      ok = c.integer(time, 0, kMaxId);
    } else if (first(k, "query_tokens", has_query)) {
      ok = c.integer(query, 1, kMaxTokens);
    } else if (first(k, "output_tokens", has_output)) {
      ok = c.integer(output, 1, kMaxTokens);
    } else if (first(k, "facts", has_facts)) {
      // Straight into the record: a line the fast path gives up on is parsed again in full.
      r.facts.clear();
      ok = c.id_array(r.facts);
    } else if (first(k, "text", has_text)) {
      ok = c.string(text);
    }
    if (!ok || !c.next(done)) return false;
  }
  if (!has_type || !has_id || !has_user || !has_time || !has_query || !has_output || !has_facts) {
    return false;
  }
  if (time < last_time_) return false;
  // A request names facts of one user, at random among millions: start every miss first.
  dense_facts_.resize(r.facts.size());
  for (const FactId f : r.facts) facts_.prefetch(f);
  for (std::size_t i = 0; i < r.facts.size(); ++i) {
    dense_facts_[i] = facts_.find_owned(r.facts[i], static_cast<UserId>(user));
    if (dense_facts_[i] == FactIndex::kAbsent) return false;  // the general parser says why
  }
  last_time_ = time;
  r.id = static_cast<RequestId>(id);
  r.user = static_cast<UserId>(user);
  r.time = time;
  r.query_tokens = static_cast<std::uint32_t>(query);
  r.output_tokens = static_cast<std::uint32_t>(output);
  r.text.assign(text);
  r.qa.category = 0;
  r.qa.answer.clear();
  r.qa.evidence.clear();
  out.kind = RecordKind::kRequest;
  return true;
}

}  // namespace inferscale
