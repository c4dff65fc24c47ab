#include "executor/gpu/model_presets.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "traces/error.h"

namespace inferscale {

namespace {

std::uint32_t parse_u32(const std::string& key, const std::string& value,
                        const std::string& where) {
  char* end = nullptr;
  const unsigned long v = std::strtoul(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || v == 0 || v > 0xffffffffUL) {
    throw InputError(where,
                     "custom model: " + key + " must be a positive integer, got '" + value + "'");
  }
  return std::uint32_t(v);
}

}  // namespace

std::vector<std::string> model_preset_names() {
  return preset_names("models");
}

std::optional<ModelConfig> model_preset(const std::string& name) {
  const auto names = model_preset_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) return std::nullopt;
  return load_model_config(name, "model preset '" + name + "'");
}

ModelConfig parse_model_spec(const std::string& spec, const std::string& where) {
  if (auto preset = model_preset(spec)) return *preset;
  const std::string prefix = "custom:";
  if (spec.rfind(prefix, 0) != 0) {
    std::string names;
    for (const auto& n : model_preset_names()) names += (names.empty() ? "" : ", ") + n;
    throw InputError(where, "unknown model '" + spec + "': expected one of " + names +
                                ", or custom:layers=..,hidden=..,heads=..,kv_heads=..,"
                                "head_dim=..,ffn=..,vocab=..");
  }
  ModelConfig m;
  m.name = spec;
  m.max_positions = 8192;
  std::stringstream in(spec.substr(prefix.size()));
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      throw InputError(where, "custom model: expected key=value, got '" + item + "'");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "layers")
      m.layers = parse_u32(key, value, where);
    else if (key == "hidden")
      m.hidden = parse_u32(key, value, where);
    else if (key == "heads")
      m.heads = parse_u32(key, value, where);
    else if (key == "kv_heads")
      m.kv_heads = parse_u32(key, value, where);
    else if (key == "head_dim")
      m.head_dim = parse_u32(key, value, where);
    else if (key == "ffn")
      m.ffn = parse_u32(key, value, where);
    else if (key == "vocab")
      m.vocab = parse_u32(key, value, where);
    else if (key == "max_positions")
      m.max_positions = parse_u32(key, value, where);
    else if (key == "rope_theta")
      m.rope_theta = parse_u32(key, value, where);
    else if (key == "rope_style" && (value == "neox" || value == "gptj")) {
      m.rope_layout = value == "neox" ? RopeLayout::kNeox : RopeLayout::kGptj;
    } else {
      throw InputError(where, "custom model: unknown key or value '" + item +
                                  "' (keys: layers, hidden, heads, kv_heads, head_dim, ffn, "
                                  "vocab, max_positions, rope_theta, rope_style=neox|gptj)");
    }
  }
  if (m.layers == 0 || m.hidden == 0 || m.heads == 0 || m.kv_heads == 0 || m.head_dim == 0 ||
      m.ffn == 0 || m.vocab == 0) {
    throw InputError(where,
                     "custom model: layers, hidden, heads, kv_heads, head_dim, ffn and "
                     "vocab are all required");
  }
  if (m.heads % m.kv_heads != 0 || m.head_dim % 2 != 0) {
    throw InputError(where, "custom model: heads must be a multiple of kv_heads and head_dim even");
  }
  return m;
}

}  // namespace inferscale
