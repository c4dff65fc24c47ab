#include "executor/gpu/model_presets.h"

#include <cstdlib>
#include <sstream>

#include "traces/error.h"

namespace inferscale {

namespace {

ModelConfig llama31_8b() {
  // meta-llama/Llama-3.1-8B config.json
  ModelConfig m;
  m.name = "llama-3.1-8b";
  m.layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.ffn = 14336;
  m.vocab = 128256;
  m.rope_theta = 500000.0;
  m.rope_scaling_factor = 8.0;
  m.rope_low_freq_factor = 1.0;
  m.rope_high_freq_factor = 4.0;
  m.rope_original_max_positions = 8192;
  m.rms_eps = 1e-5;
  m.max_positions = 131072;
  return m;
}

ModelConfig mistral_7b() {
  // mistralai/Mistral-7B-v0.3 config.json
  ModelConfig m;
  m.name = "mistral-7b";
  m.layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.ffn = 14336;
  m.vocab = 32768;
  m.rope_theta = 1000000.0;
  m.rms_eps = 1e-5;
  m.max_positions = 32768;
  return m;
}

ModelConfig qwen25_7b() {
  // Qwen/Qwen2.5-7B config.json (its q/k/v projection biases are not modelled by the random
  // weights; real weights come with the weight loader)
  ModelConfig m;
  m.name = "qwen2.5-7b";
  m.layers = 28;
  m.hidden = 3584;
  m.heads = 28;
  m.kv_heads = 4;
  m.head_dim = 128;
  m.ffn = 18944;
  m.vocab = 152064;
  m.rope_theta = 1000000.0;
  m.rms_eps = 1e-6;
  m.max_positions = 131072;
  return m;
}

ModelConfig smollm2_135m() {
  // HuggingFaceTB/SmolLM2-135M config.json
  ModelConfig m;
  m.name = "smollm2-135m";
  m.layers = 30;
  m.hidden = 576;
  m.heads = 9;
  m.kv_heads = 3;
  m.head_dim = 64;
  m.ffn = 1536;
  m.vocab = 49152;
  m.tie_embeddings = true;
  m.rope_theta = 100000.0;
  m.rms_eps = 1e-5;
  m.max_positions = 8192;
  return m;
}

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
  return {"llama-3.1-8b", "mistral-7b", "qwen2.5-7b", "smollm2-135m"};
}

std::optional<ModelConfig> model_preset(const std::string& name) {
  if (name == "llama-3.1-8b") return llama31_8b();
  if (name == "mistral-7b") return mistral_7b();
  if (name == "qwen2.5-7b") return qwen25_7b();
  if (name == "smollm2-135m") return smollm2_135m();
  return std::nullopt;
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
