#include "executor/model_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <utility>

#include "traces/error.h"

namespace inferscale {

namespace fs = std::filesystem;

double GpuConfig::curve_factor(const std::vector<std::pair<double, double>>& curve, double x) {
  if (curve.empty()) return 1.0;
  if (x <= curve.front().first) return curve.front().second;
  if (x >= curve.back().first) return curve.back().second;
  std::size_t i = 1;
  while (curve[i].first < x) ++i;
  const auto& [x0, f0] = curve[i - 1];
  const auto& [x1, f1] = curve[i];
  const double t = (std::log2(x) - std::log2(x0)) / (std::log2(x1) - std::log2(x0));
  return f0 + t * (f1 - f0);
}

std::string config_dir() {
  if (fs::exists("configs/models")) return "configs";
  return INFERSCALE_SOURCE_CONFIGS;
}

std::string preset_path(const std::string& name_or_path, const std::string& folder) {
  if (name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".yaml")) {
    return name_or_path;
  }
  return config_dir() + "/" + folder + "/" + name_or_path + ".yaml";
}

std::vector<std::string> preset_names(const std::string& folder) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(config_dir() + "/" + folder, ec)) {
    if (e.path().extension() == ".yaml") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

constexpr std::int64_t kMaxU32 = 0xffffffffll;

/// Typed reads of one map of a model description; errors at `where(path)`.
class ModelReader {
 public:
  ModelReader(const YAML::Node& map, const ModelWhere& where, std::string prefix)
      : map_(map), where_(where), prefix_(std::move(prefix)) {}

  bool has(const char* key) const { return map_[key] && !map_[key].IsNull(); }
  std::string path(const std::string& key) const {
    return prefix_.empty() ? key : key.empty() ? prefix_ : prefix_ + "." + key;
  }
  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    throw InputError(where_(path(key)), message);
  }

  void reject_unknown(const std::vector<std::string>& allowed) const {
    std::vector<std::string> seen;
    for (const auto& kv : map_) {
      const auto k = kv.first.Scalar();
      if (std::find(seen.begin(), seen.end(), k) != seen.end()) {
        fail(k, "duplicate key '" + k + "'");
      }
      seen.push_back(k);
      if (std::find(allowed.begin(), allowed.end(), k) != allowed.end()) continue;
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      fail(k, "unknown key '" + k + "' (expected one of: " + list + ")");
    }
  }

  std::string scalar(const char* key) const {
    const YAML::Node n = map_[key];
    if (!n.IsScalar()) fail(key, "expected a single value");
    return n.Scalar();
  }
  std::string text(const char* key, const std::string& fallback) const {
    return has(key) ? scalar(key) : fallback;
  }
  std::string choice(const char* key, const std::string& fallback,
                     const std::vector<std::string>& allowed) const {
    const auto v = text(key, fallback);
    if (std::find(allowed.begin(), allowed.end(), v) != allowed.end()) return v;
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    fail(key, "expected one of " + list + ", got '" + v + "'");
  }
  double number(const char* key, double fallback, double lo, double hi) const {
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
  std::uint32_t integer(const char* key, std::int64_t fallback, std::int64_t lo,
                        std::int64_t hi) const {
    if (!has(key)) return static_cast<std::uint32_t>(fallback);
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
    return static_cast<std::uint32_t>(v);
  }
  bool boolean(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    const auto s = scalar(key);
    if (s == "true" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "no" || s == "off") return false;
    fail(key, "expected true or false, got '" + s + "'");
  }

 private:
  const YAML::Node map_;
  const ModelWhere& where_;
  std::string prefix_;
};

void parse_rope_scaling(const ModelReader& model, const YAML::Node& node, const ModelWhere& where,
                        ModelConfig& m) {
  if (!node.IsMap()) model.fail("rope_scaling", "expected a map of keys");
  const ModelReader s(node, where, "rope_scaling");
  s.reject_unknown(
      {"type", "factor", "low_freq_factor", "high_freq_factor", "original_max_positions"});
  s.choice("type", "llama3", {"llama3"});
  m.rope_scaling_factor = s.number("factor", 8, 1, 1e6);
  m.rope_low_freq_factor = s.number("low_freq_factor", 1, 0, 1e6);
  m.rope_high_freq_factor = s.number("high_freq_factor", 4, 0, 1e6);
  m.rope_original_max_positions = s.integer("original_max_positions", 8192, 1, kMaxU32);
}

/// experts, experts_active, expert_ffn: all three or none.
void parse_experts(const ModelReader& v, ModelConfig& m) {
  const bool any = v.has("experts") || v.has("experts_active") || v.has("expert_ffn");
  if (!any) return;
  for (const char* k : {"experts", "experts_active", "expert_ffn"}) {
    if (!v.has(k)) {
      v.fail("", std::string("a mixture-of-experts model needs experts, experts_active and "
                             "expert_ffn: missing key '") +
                     k + "'");
    }
  }
  m.experts = v.integer("experts", 0, 1, 65536);
  m.experts_active = v.integer("experts_active", 0, 1, 65536);
  m.expert_ffn = v.integer("expert_ffn", 0, 1, 1 << 22);
  if (m.experts_active > m.experts) {
    v.fail("experts_active", "experts_active (" + std::to_string(m.experts_active) +
                                 ") must not exceed experts (" + std::to_string(m.experts) + ")");
  }
}

}  // namespace

ModelConfig parse_model_config(const YAML::Node& node, const ModelWhere& where) {
  const ModelReader v(node, where, "");
  if (!node.IsMap()) v.fail("", "expected a map of keys");
  v.reject_unknown({"name", "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab",
                    "dtype", "tie_embeddings", "rope_theta", "rope_layout", "rope_scaling",
                    "rms_eps", "max_positions", "experts", "experts_active", "expert_ffn"});
  for (const char* k : {"layers", "hidden", "heads", "ffn", "vocab"}) {
    if (!v.has(k)) v.fail("", std::string("model: missing key '") + k + "'");
  }
  ModelConfig m;
  m.name = v.text("name", "custom");
  m.layers = v.integer("layers", 0, 1, 1024);
  m.hidden = v.integer("hidden", 0, 1, 1 << 20);
  m.heads = v.integer("heads", 0, 1, 4096);
  m.kv_heads = v.integer("kv_heads", m.heads, 1, 4096);
  m.head_dim = v.integer("head_dim", m.hidden / m.heads, 2, 4096);
  m.ffn = v.integer("ffn", 0, 1, 1 << 22);
  m.vocab = v.integer("vocab", 0, 1, 1 << 24);
  if (m.heads % m.kv_heads != 0) v.fail("kv_heads", "heads must be a multiple of kv_heads");
  if (m.head_dim % 2 != 0) v.fail("head_dim", "head_dim must be even (rotary pairs)");
  m.dtype_bytes = v.choice("dtype", "bf16", {"bf16", "fp16", "fp32"}) == "fp32" ? 4 : 2;
  m.tie_embeddings = v.boolean("tie_embeddings", false);
  m.rope_theta = v.number("rope_theta", 10000, 1, 1e12);
  m.rope_layout = v.choice("rope_layout", "neox", {"neox", "gptj"}) == "neox" ? RopeLayout::kNeox
                                                                              : RopeLayout::kGptj;
  if (v.has("rope_scaling")) parse_rope_scaling(v, node["rope_scaling"], where, m);
  m.rms_eps = v.number("rms_eps", 1e-5, 0, 1);
  m.max_positions = v.integer("max_positions", 131072, 1, kMaxU32);
  parse_experts(v, m);
  return m;
}

ModelConfig load_model_config(const std::string& name_or_path, const std::string& where) {
  const std::string path = preset_path(name_or_path, "models");
  if (!path_exists(path, where)) {
    std::string names;
    for (const auto& n : preset_names("models")) names += (names.empty() ? "" : ", ") + n;
    throw InputError(where, "unknown model '" + name_or_path + "' (presets: " + names +
                                "; or give a path to a .yaml file)");
  }
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    throw InputError(position(path, e.mark.line + 1, e.mark.column + 1),
                     "YAML syntax error: " + e.msg);
  }
  // A key path's position: its value's line and column when the path resolves, else the file's.
  const ModelWhere at = [&](const std::string& key_path) {
    YAML::Node n;
    n.reset(root);
    std::stringstream parts(key_path);
    std::string part;
    while (!key_path.empty() && std::getline(parts, part, '.')) {
      if (!n.IsMap()) break;
      const YAML::Node next = std::as_const(n)[part];
      if (!next) break;
      n.reset(next);
    }
    const YAML::Mark mark = n.Mark();
    const std::string file =
        mark.is_null() || mark.line < 0 ? path : position(path, mark.line + 1, mark.column + 1);
    return file + ": " + (key_path.empty() ? "<top>" : key_path);
  };
  return parse_model_config(root, at);
}

}  // namespace inferscale
