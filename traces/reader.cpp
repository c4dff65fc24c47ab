#include "traces/reader.h"

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <string_view>

#include "traces/error.h"

namespace inferscale {

std::uint32_t FactIndex::add(FactId id, UserId user) {
  if (find(id) != kAbsent) return kAbsent;
  const auto dense = static_cast<std::uint32_t>(owner_.size());
  // Dense while ids stay dense: a table of 4 entries per fact at most (or kDenseFloor), so a
  // trace whose first fact has id 2^28 - 1 does not cost 2 GiB.
  const FactId bound = std::max<FactId>(kDenseFloor, FactId{4} * (owner_.size() + 1));
  if (id >= dense_.size() && id < kDenseLimit && id < bound) grow_dense(id);
  if (id < dense_.size()) {
    put_dense(id, dense, user);
  } else {
    sparse_.emplace(id, dense);
  }
  owner_.push_back(user);
  return dense;
}

void FactIndex::grow_dense(FactId id) {
  const std::size_t size =
      std::min<std::size_t>(kDenseLimit, std::max<std::size_t>(id + 1, dense_.size() * 3 / 2));
  dense_.resize(size);
  for (auto it = sparse_.begin(); it != sparse_.end();) {
    if (it->first < size) {
      put_dense(it->first, it->second, owner_[it->second]);
      it = sparse_.erase(it);
    } else {
      ++it;
    }
  }
}

std::uint32_t FactIndex::find_sparse(FactId id) const {
  auto it = sparse_.find(id);
  return it == sparse_.end() ? kAbsent : it->second;
}

TraceReader::TraceReader(const std::string& path, bool fast_parse)
    : path_(path), in_(path, std::ios::binary), fast_parse_(fast_parse) {
  if (!in_) throw InputError(path, "cannot open trace file");
}

void TraceReader::fail(long column, const std::string& message) const {
  throw InputError(position(path_, line_no_, column), message);
}

namespace {

using Node = JsonLine::Node;
using Type = JsonLine::Type;

/// Key equality inline: keys are short, and a memcmp call per comparison dominated parsing.
inline bool same_key(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

/// Field access on the current line with positioned errors. The constructor matches every
/// member to its allowed key once, so later lookups compare no strings.
class Fields {
 public:
  static constexpr std::size_t kMaxKeys = 12;

  Fields(const JsonLine& j, const TraceReader& r, const char* record,
         std::initializer_list<std::string_view> allowed)
      : j_(j), r_(r), record_(record) {
    for (const auto a : allowed) allowed_[n_allowed_++] = a;
    const Node& root = j.root();
    for (auto c = root.first_child; c != 0; c = j.node(c).next_sibling) {
      const auto k = j.key(j.node(c));
      std::size_t i = 0;
      while (i < n_allowed_ && !same_key(allowed_[i], k)) ++i;
      if (i == n_allowed_) {
        std::string list;
        for (const auto a : allowed) list.append(list.empty() ? "" : ", ").append(a);
        fail(j.node(c).column, "unknown key '" + std::string(k) + "' in a " + record_ +
                                   " record (expected keys: " + list + ")");
      }
      if (slot_[i] == 0) slot_[i] = c;  // the first of duplicate keys wins, as member() did
    }
  }

  [[noreturn]] void fail(long column, const std::string& msg) const {
    throw InputError(position(r_.path(), r_.line(), column), msg);
  }

  const Node* get(const char* key, bool required) const {
    const std::string_view k(key);
    std::size_t s = 0;
    while (s < n_allowed_ && !same_key(allowed_[s], k)) ++s;
    const auto i = s < n_allowed_ ? slot_[s] : 0;
    if (i == 0) {
      if (required) {
        fail(static_cast<long>(j_.root().column),
             std::string("missing key '") + key + "' in a " + record_ + " record");
      }
      return nullptr;
    }
    return &j_.node(i);
  }

  std::int64_t integer(const Node& n, const char* key, std::int64_t lo, std::int64_t hi) const {
    if (n.type != Type::kNumber || !n.integral) {
      fail(n.column,
           std::string("key '") + key + "': expected an integer, got " +
               (n.type == Type::kNumber ? "a fractional number" : JsonLine::type_name(n.type)));
    }
    if (n.int_value < lo || n.int_value > hi) {
      fail(n.column, std::string("key '") + key + "': expected an integer in [" +
                         std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                         std::to_string(n.int_value));
    }
    return n.int_value;
  }
  std::int64_t integer(const char* key, std::int64_t lo, std::int64_t hi, bool required,
                       std::int64_t fallback = 0) const {
    const Node* n = get(key, required);
    return n == nullptr ? fallback : integer(*n, key, lo, hi);
  }
  double number(const char* key, double lo, double hi, double fallback) const {
    const Node* n = get(key, false);
    if (n == nullptr) return fallback;
    if (n->type != Type::kNumber) {
      fail(n->column, std::string("key '") + key + "': expected a number, got " +
                          JsonLine::type_name(n->type));
    }
    if (n->number < lo || n->number > hi) {
      fail(n->column, std::string("key '") + key + "': expected a number in [" +
                          std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return n->number;
  }
  bool string(const char* key, std::string& out, bool required) const {
    const Node* n = get(key, required);
    if (n == nullptr) {
      out.clear();
      return false;
    }
    if (n->type != Type::kString) {
      fail(n->column, std::string("key '") + key + "': expected a string, got " +
                          JsonLine::type_name(n->type));
    }
    out.assign(j_.str(*n));
    return true;
  }
  const Node* array(const char* key, bool required) const {
    const Node* n = get(key, required);
    if (n != nullptr && n->type != Type::kArray) {
      fail(n->column, std::string("key '") + key + "': expected an array, got " +
                          JsonLine::type_name(n->type));
    }
    return n;
  }
  const JsonLine& json() const { return j_; }

 private:
  const JsonLine& j_;
  const TraceReader& r_;
  const char* record_;
  std::string_view allowed_[kMaxKeys];
  std::uint32_t slot_[kMaxKeys] = {};  // node index of allowed_[i]'s member, 0: absent
  std::size_t n_allowed_ = 0;
};

constexpr std::int64_t kMaxId = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMaxTokens = 1 << 24;

}  // namespace

bool TraceReader::next(TraceRecord& out) {
  if (!next_line()) {
    if (in_.bad()) throw InputError(path_, "read error");
    return false;
  }
  if (!fast_parse_ || !parse_fast(out)) parse_general(out);
  seen_record_ = true;
  return true;
}

bool TraceReader::next_line() {
  while (std::getline(in_, line_)) {
    ++line_no_;
    bytes_read_ += line_.size() + 1;
    if (!line_.empty() && line_.find_first_not_of(" \t\r") != std::string::npos) return true;
  }
  return false;
}

bool TraceReader::parse_fast(TraceRecord& out) {
  // A header line always takes the general parser (it must also be the first record).
  if (!seen_record_ && line_.rfind("{\"type\":\"header\"", 0) == 0) return false;
  if (line_.rfind("{\"type\":\"request\"", 0) == 0) return fast_request(out);
  if (line_.rfind("{\"type\":\"fact\"", 0) == 0 ||
      line_.rfind("{\"type\":\"memory_write\"", 0) == 0) {
    return fast_fact(out);
  }
  return false;
}

void TraceReader::parse_general(TraceRecord& out) {
  if (!json_.parse(line_)) fail(json_.error_column(), json_.error());
  const auto& root = json_.root();
  if (root.type != JsonLine::Type::kObject) {
    fail(root.column, std::string("expected a JSON object, got ") + JsonLine::type_name(root.type));
  }
  const auto t = json_.member(root, "type");
  if (t == 0) fail(root.column, "missing key 'type' (fact, memory_write, request or header)");
  const auto& tn = json_.node(t);
  if (tn.type != JsonLine::Type::kString) fail(tn.column, "key 'type': expected a string");
  const auto type = json_.str(tn);
  if (type == "header") {
    if (seen_record_) fail(tn.column, "a header record must be the first line");
    parse_header(out);
  } else if (type == "fact") {
    parse_fact(out, false);
  } else if (type == "memory_write") {
    parse_fact(out, true);
  } else if (type == "request") {
    parse_request(out);
  } else {
    fail(tn.column, "unknown record type '" + std::string(type) +
                        "' (expected fact, memory_write, request or header)");
  }
}

void TraceReader::parse_header(TraceRecord& out) {
  Fields f(json_, *this, "header",
           {"type", "version", "source", "arrival", "concurrency", "think_time_ns",
            "tokens_per_word", "k", "description"});
  TraceHeader h;
  h.version = static_cast<int>(f.integer("version", 1, 1, true));
  f.string("source", h.source, false);
  std::string arrival;
  if (f.string("arrival", arrival, false)) {
    if (arrival == "open") {
      h.arrival = ArrivalMode::kOpen;
    } else if (arrival == "closed_loop") {
      h.arrival = ArrivalMode::kClosedLoop;
    } else {
      f.fail(f.get("arrival", true)->column,
             "key 'arrival': expected 'open' or 'closed_loop', got '" + arrival + "'");
    }
  }
  h.concurrency = static_cast<std::uint32_t>(f.integer("concurrency", 0, 1 << 30, false));
  h.think_time_ns = f.integer("think_time_ns", 0, kMaxId, false);
  h.tokens_per_word = f.number("tokens_per_word", 0, 1000, 0);
  h.k = static_cast<std::uint32_t>(f.integer("k", 0, 1 << 20, false));
  f.string("description", h.description, false);
  if (h.arrival == ArrivalMode::kClosedLoop && h.concurrency == 0) {
    f.fail(json_.root().column, "a closed_loop header needs 'concurrency' >= 1");
  }
  header_ = h;
  out.kind = RecordKind::kHeader;
  out.header = h;
}

void TraceReader::parse_fact(TraceRecord& out, bool memory_write) {
  const char* name = memory_write ? "memory_write" : "fact";
  Fields f(json_, *this, name,
           {"type", "id", "user", "tokens", "time", "text", "source", "session", "context_tokens"});
  FactRecord& r = out.fact;
  r.id = static_cast<FactId>(f.integer("id", 0, kMaxId, true));
  r.user = static_cast<UserId>(f.integer("user", 0, kMaxId, true));
  r.tokens = static_cast<std::uint32_t>(f.integer("tokens", 1, kMaxTokens, true));
  r.time = f.integer("time", 0, kMaxId, memory_write, last_time_);
  if (r.time < last_time_) {
    f.fail(f.get("time", true)->column, "time goes backwards: " + std::to_string(r.time) +
                                            " after " + std::to_string(last_time_) +
                                            " (records must be in time order)");
  }
  last_time_ = r.time;
  f.string("text", r.text, false);
  f.string("source", r.source, false);
  r.session = static_cast<std::int32_t>(f.integer("session", 0, 1 << 30, false, -1));
  r.context_tokens.clear();
  if (const auto* a = f.array("context_tokens", false)) {
    for (auto c = a->first_child; c != 0; c = json_.node(c).next_sibling) {
      r.context_tokens.push_back(
          static_cast<std::uint32_t>(f.integer(json_.node(c), "context_tokens", 0, kMaxTokens)));
    }
  }
  if (facts_.add(r.id, r.user) == FactIndex::kAbsent) {
    f.fail(f.get("id", true)->column, "duplicate fact id " + std::to_string(r.id));
  }
  out.kind = memory_write ? RecordKind::kMemoryWrite : RecordKind::kFact;
}

void TraceReader::parse_request(TraceRecord& out) {
  Fields f(json_, *this, "request",
           {"type", "id", "user", "time", "query_tokens", "output_tokens", "facts", "text", "qa"});
  RequestRecord& r = out.request;
  r.id = static_cast<RequestId>(f.integer("id", 0, kMaxId, true));
  r.user = static_cast<UserId>(f.integer("user", 0, kMaxId, true));
  r.time = f.integer("time", 0, kMaxId, true);
  if (r.time < last_time_) {
    f.fail(f.get("time", true)->column, "time goes backwards: " + std::to_string(r.time) +
                                            " after " + std::to_string(last_time_) +
                                            " (records must be in time order)");
  }
  last_time_ = r.time;
  r.query_tokens = static_cast<std::uint32_t>(f.integer("query_tokens", 1, kMaxTokens, true));
  r.output_tokens = static_cast<std::uint32_t>(f.integer("output_tokens", 1, kMaxTokens, true));
  r.facts.clear();
  dense_facts_.clear();
  const auto* a = f.array("facts", true);
  for (auto c = a->first_child; c != 0; c = json_.node(c).next_sibling) {
    const auto& n = json_.node(c);
    const auto id = static_cast<FactId>(f.integer(n, "facts", 0, kMaxId));
    const auto dense = facts_.find(id);
    if (dense == FactIndex::kAbsent) {
      f.fail(n.column, "request " + std::to_string(r.id) + " names fact " + std::to_string(id) +
                           ", which does not exist (yet): facts must be declared before use");
    }
    if (facts_.owner(dense) != r.user) {
      f.fail(n.column, "request " + std::to_string(r.id) + " of user " + std::to_string(r.user) +
                           " names fact " + std::to_string(id) + " of user " +
                           std::to_string(facts_.owner(dense)));
    }
    r.facts.push_back(id);
    dense_facts_.push_back(dense);
  }
  f.string("text", r.text, false);
  r.qa.category = 0;  // cleared, not reassigned: the vector and string keep their capacity
  r.qa.answer.clear();
  r.qa.evidence.clear();
  if (const Node* qa = f.get("qa", false)) {
    if (qa->type != Type::kObject) {
      f.fail(qa->column,
             std::string("key 'qa': expected an object, got ") + JsonLine::type_name(qa->type));
    }
    for (auto c = qa->first_child; c != 0; c = json_.node(c).next_sibling) {
      const auto& n = json_.node(c);
      const auto k = json_.key(n);
      if (k == "category") {
        r.qa.category = static_cast<int>(f.integer(n, "qa.category", 1, 5));
      } else if (k == "answer") {
        if (n.type != Type::kString) f.fail(n.column, "key 'qa.answer': expected a string");
        r.qa.answer.assign(json_.str(n));
      } else if (k == "evidence") {
        if (n.type != Type::kArray) f.fail(n.column, "key 'qa.evidence': expected an array");
        for (auto e = n.first_child; e != 0; e = json_.node(e).next_sibling) {
          const auto& en = json_.node(e);
          if (en.type != Type::kString) {
            f.fail(en.column, "key 'qa.evidence': expected strings (dia_ids)");
          }
          r.qa.evidence.emplace_back(json_.str(en));
        }
      } else {
        f.fail(n.column, "unknown key 'qa." + std::string(k) +
                             "' (expected keys: category, answer, evidence)");
      }
    }
  }
  out.kind = RecordKind::kRequest;
}

}  // namespace inferscale
