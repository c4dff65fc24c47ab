#include "sim/config/yaml_view.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <sstream>

namespace inferscale {

std::string yaml_position(const YAML::Node& node, const std::string& source) {
  if (source.rfind("--set", 0) == 0) return source;  // command-line values have no file position
  const YAML::Mark m = node.Mark();
  if (m.is_null() || m.line < 0) return source;
  return position(source, m.line + 1, m.column + 1);
}

std::string YamlView::key_name(const YAML::Node& key, const std::string& source) const {
  // YAML allows a map or a list as a key (`? {a: 1}`); a config's keys are names.
  if (!key.IsScalar()) {
    throw InputError(yaml_position(key, source) + ": " + (path_.empty() ? "<top>" : path_),
                     std::string("expected a key name, got a ") + (key.IsMap()        ? "map"
                                                                   : key.IsSequence() ? "list"
                                                                                      : "null"));
  }
  return key.Scalar();
}

YAML::Node load_yaml_file(const std::string& path) {
  if (!path_exists(path, path)) throw InputError(path, "file not found");
  try {
    return YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    throw InputError(position(path, e.mark.line + 1, e.mark.column + 1),
                     "YAML syntax error: " + e.msg);
  }
}

YamlView::YamlView(std::vector<YamlLayer> layers, std::string path)
    : layers_(std::move(layers)), path_(std::move(path)) {
  for (const auto& l : layers_) {
    if (l.node && !l.node.IsNull() && !l.node.IsMap()) {
      throw InputError(yaml_position(l.node, l.source) + ": " + (path_.empty() ? "<top>" : path_),
                       "expected a map of keys");
    }
  }
}

std::string YamlView::key_path(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

const YamlLayer* YamlView::find(const std::string& key) const {
  for (const auto& l : layers_) {
    if (l.node && l.node.IsMap() && l.node[key]) return &l;
  }
  return nullptr;
}

bool YamlView::has(const std::string& key) const {
  return find(key) != nullptr;
}

YAML::Node YamlView::node(const std::string& key) const {
  const YamlLayer* l = find(key);
  return l ? l->node[key] : YAML::Node(YAML::NodeType::Undefined);
}

bool YamlView::is_map(const std::string& key) const {
  const auto n = node(key);
  return n && n.IsMap();
}

bool YamlView::is_sequence(const std::string& key) const {
  const auto n = node(key);
  return n && n.IsSequence();
}

std::string YamlView::where() const {
  // A file's map before a `--set` layer: a key missing from both is missing from the file (the
  // `--set` layers hold only the keys given on the command line).
  for (const bool from_set : {false, true}) {
    for (const auto& l : layers_) {
      if (l.node && l.node.IsMap() && (l.source.rfind("--set", 0) == 0) == from_set) {
        return yaml_position(l.node, l.source) + ": " + (path_.empty() ? "<top>" : path_);
      }
    }
  }
  return layers_.empty() ? path_ : layers_.front().source + ": " + path_;
}

std::string YamlView::where(const std::string& key) const {
  const YamlLayer* l = find(key);
  if (l == nullptr) return where();
  return yaml_position(l->node[key], l->source) + ": " + key_path(key);
}

void YamlView::fail(const std::string& key, const std::string& message) const {
  throw InputError(key.empty() ? where() : where(key), message);
}

YamlView YamlView::child(const std::string& key) const {
  std::vector<YamlLayer> sub;
  for (const auto& l : layers_) {
    if (!(l.node && l.node.IsMap() && l.node[key])) continue;
    const YAML::Node n = l.node[key];
    if (n.IsNull()) continue;
    if (!n.IsMap()) {
      // A map above replaces a scalar or a sequence below (a `--set` value may change a key's
      // kind): the layers below it are hidden, not wrong.
      if (!sub.empty()) break;
      throw InputError(yaml_position(n, l.source) + ": " + key_path(key), "expected a map of keys");
    }
    sub.push_back({n, l.source});
  }
  return YamlView(std::move(sub), key_path(key));
}

std::vector<std::string> YamlView::keys() const {
  std::vector<std::string> out;
  for (const auto& l : layers_) {
    if (!(l.node && l.node.IsMap())) continue;
    for (const auto& kv : l.node) {
      const auto k = key_name(kv.first, l.source);
      if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
    }
  }
  return out;
}

void YamlView::reject_unknown(const std::vector<std::string>& allowed) const {
  for (const auto& l : layers_) {
    if (!(l.node && l.node.IsMap())) continue;
    std::vector<std::string> seen;
    for (const auto& kv : l.node) {
      const auto k = key_name(kv.first, l.source);
      if (std::find(seen.begin(), seen.end(), k) != seen.end()) {
        throw InputError(yaml_position(kv.first, l.source) + ": " + key_path(k),
                         "duplicate key '" + k + "'");
      }
      seen.push_back(k);
      if (std::find(allowed.begin(), allowed.end(), k) != allowed.end()) continue;
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw InputError(yaml_position(kv.first, l.source) + ": " + key_path(k),
                       "unknown key '" + k + "' (expected one of: " + list + ")");
    }
  }
}

std::string YamlView::scalar(const std::string& key) const {
  const auto n = node(key);
  if (!n || !n.IsScalar()) fail(key, "expected a single value");
  return n.Scalar();
}

std::string YamlView::text(const std::string& key, const std::string& fallback) const {
  if (!has(key) || node(key).IsNull()) return fallback;
  return scalar(key);
}

std::string YamlView::choice(const std::string& key, const std::string& fallback,
                             const std::vector<std::string>& allowed) const {
  const auto v = text(key, fallback);
  for (const auto& a : allowed) {
    if (a == v) return v;
  }
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  fail(key, "expected one of " + list + ", got '" + v + "'");
}

double YamlView::number(const std::string& key, double fallback, double lo, double hi) const {
  if (!has(key)) return fallback;
  const auto s = scalar(key);
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) {
    fail(key, "expected a number, got '" + s + "'");
  }
  if (v < lo || v > hi) {
    std::ostringstream os;
    os << "expected a number in [" << lo << ", " << hi << "], got " << s;
    fail(key, os.str());
  }
  return v;
}

std::int64_t YamlView::integer(const std::string& key, std::int64_t fallback, std::int64_t lo,
                               std::int64_t hi) const {
  if (!has(key)) return fallback;
  const auto s = scalar(key);
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) {
    fail(key, "expected an integer, got '" + s + "'");
  }
  if (v < lo || v > hi) {
    fail(key, "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                  "], got " + s);
  }
  return v;
}

bool YamlView::boolean(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  const auto s = scalar(key);
  if (s == "true" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "no" || s == "off") return false;
  fail(key, "expected true or false, got '" + s + "'");
}

std::uint64_t YamlView::bytes(const std::string& key, std::uint64_t fallback,
                              std::optional<std::uint64_t> whole_bytes) const {
  if (!has(key)) return fallback;
  const auto s = scalar(key);
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p == s.data() || !std::isfinite(v) || v < 0) {
    fail(key, "expected a non-negative size such as 40GiB, 141GB, 1048576 or 30%, got '" + s + "'");
  }
  std::string unit(p, s.data() + s.size());
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  double mult = 1;
  if (unit.empty() || unit == "B") {
    mult = 1;
  } else if (unit == "%") {
    if (!whole_bytes) fail(key, "a percentage is not allowed here");
    if (v > 100) fail(key, "expected a percentage in [0, 100], got " + s);
    return static_cast<std::uint64_t>(std::llround(v / 100.0 * double(*whole_bytes)));
  } else if (unit == "KB") {
    mult = 1e3;
  } else if (unit == "MB") {
    mult = 1e6;
  } else if (unit == "GB") {
    mult = 1e9;
  } else if (unit == "TB") {
    mult = 1e12;
  } else if (unit == "KiB") {
    mult = 1024.0;
  } else if (unit == "MiB") {
    mult = 1024.0 * 1024;
  } else if (unit == "GiB") {
    mult = 1024.0 * 1024 * 1024;
  } else if (unit == "TiB") {
    mult = 1024.0 * 1024 * 1024 * 1024;
  } else {
    fail(key, "unknown size unit '" + unit + "' (use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB or %)");
  }
  return static_cast<std::uint64_t>(std::llround(v * mult));
}

}  // namespace inferscale
