// A Hugging Face checkpoint: config.json and *.safetensors (one file or shards).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "executor/weights/llama_checkpoint.h"
#include "executor/weights/safetensors.h"
#include "traces/error.h"

namespace inferscale {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::uint32_t positive(const Json& c, const std::string& file, const char* key) {
  if (!c.contains(key) || !c[key].is_number_unsigned() || c[key].get<std::uint64_t>() == 0) {
    throw InputError(file + ": " + key, "expected a positive integer");
  }
  return std::uint32_t(c[key].get<std::uint64_t>());
}

double number(const Json& c, const std::string& file, const char* key, double fallback) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  if (!c[key].is_number()) throw InputError(file + ": " + key, "expected a number");
  return c[key].get<double>();
}

ModelConfig read_config(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw InputError(file, "cannot open (a safetensors checkpoint needs its config.json)");
  std::stringstream ss;
  ss << in.rdbuf();
  Json c;
  try {
    c = Json::parse(ss.str());
  } catch (const Json::parse_error& e) {
    throw InputError(file + ": byte " + std::to_string(e.byte), "invalid JSON");
  }
  const std::string type = c.value("model_type", "");
  if (type != "llama" && type != "mistral") {
    throw InputError(file + ": model_type", "'" + type + "' (expected llama or mistral)");
  }
  ModelConfig m;
  m.name = c.value("_name_or_path", fs::path(file).parent_path().filename().string());
  m.layers = positive(c, file, "num_hidden_layers");
  m.hidden = positive(c, file, "hidden_size");
  m.heads = positive(c, file, "num_attention_heads");
  m.kv_heads =
      c.contains("num_key_value_heads") ? positive(c, file, "num_key_value_heads") : m.heads;
  m.head_dim = c.contains("head_dim") && !c["head_dim"].is_null() ? positive(c, file, "head_dim")
                                                                  : m.hidden / m.heads;
  m.ffn = positive(c, file, "intermediate_size");
  m.vocab = positive(c, file, "vocab_size");
  m.tie_embeddings = c.value("tie_word_embeddings", false);
  m.rope_theta = number(c, file, "rope_theta", 10000.0);
  m.rms_eps = number(c, file, "rms_norm_eps", 1e-6);
  m.max_positions =
      c.contains("max_position_embeddings") ? positive(c, file, "max_position_embeddings") : 8192;
  if (m.heads % m.kv_heads != 0) {
    throw InputError(file + ": num_key_value_heads", "expected a divisor of num_attention_heads");
  }
  if (c.contains("rope_scaling") && !c["rope_scaling"].is_null()) {
    const Json& s = c["rope_scaling"];
    const std::string kind = s.value("rope_type", s.value("type", ""));
    if (kind != "llama3") {
      throw InputError(file + ": rope_scaling.rope_type",
                       "'" + kind + "' (expected llama3 or no rope_scaling)");
    }
    m.rope_scaling_factor = number(s, file, "factor", 8.0);
    m.rope_low_freq_factor = number(s, file, "low_freq_factor", 1.0);
    m.rope_high_freq_factor = number(s, file, "high_freq_factor", 4.0);
    m.rope_original_max_positions =
        std::uint32_t(number(s, file, "original_max_position_embeddings", 8192));
  }
  m.rope_layout = RopeLayout::kNeox;
  return m;
}

class SafetensorsCheckpoint : public LlamaCheckpoint {
 public:
  explicit SafetensorsCheckpoint(const std::string& path) {
    fs::path dir = fs::is_directory(path) ? fs::path(path) : fs::path(path).parent_path();
    if (dir.empty()) dir = ".";
    std::vector<std::string> files;
    if (fs::is_directory(path)) {
      for (const auto& e : fs::directory_iterator(dir)) {
        if (e.path().extension() == ".safetensors") files.push_back(e.path().string());
      }
      std::sort(files.begin(), files.end());
    } else {
      files.push_back(path);
    }
    if (files.empty()) throw InputError(path, "no *.safetensors file in the directory");
    config_ = read_config((dir / "config.json").string());
    where_ = path;
    for (const auto& f : files) shards_.push_back(std::make_unique<SafetensorsFile>(f));
  }

  HostTensor read(LlamaWeight w, std::uint32_t layer) const override {
    const std::string name = hf_name(w, layer);
    for (const auto& s : shards_) {
      const SafetensorsTensor* t = s->find(name);
      if (t == nullptr) continue;
      HostTensor out;
      out.shape = llama_weight_shape(config_, w);
      if (t->shape != std::vector<std::uint64_t>(out.shape.begin(), out.shape.end())) {
        throw InputError(s->path() + ": " + name, "shape does not match config.json");
      }
      out.data = s->to_float(*t);
      return out;
    }
    throw InputError(where_ + ": " + name, "missing tensor");
  }

  std::string describe() const override { return "safetensors(" + where_ + ")"; }

 private:
  static std::string hf_name(LlamaWeight w, std::uint32_t l) {
    const std::string b = "model.layers." + std::to_string(l) + ".";
    switch (w) {
      case LlamaWeight::kEmbed:
        return "model.embed_tokens.weight";
      case LlamaWeight::kFinalNorm:
        return "model.norm.weight";
      case LlamaWeight::kLmHead:
        return "lm_head.weight";
      case LlamaWeight::kAttnNorm:
        return b + "input_layernorm.weight";
      case LlamaWeight::kWq:
        return b + "self_attn.q_proj.weight";
      case LlamaWeight::kWk:
        return b + "self_attn.k_proj.weight";
      case LlamaWeight::kWv:
        return b + "self_attn.v_proj.weight";
      case LlamaWeight::kWo:
        return b + "self_attn.o_proj.weight";
      case LlamaWeight::kMlpNorm:
        return b + "post_attention_layernorm.weight";
      case LlamaWeight::kWgate:
        return b + "mlp.gate_proj.weight";
      case LlamaWeight::kWup:
        return b + "mlp.up_proj.weight";
      case LlamaWeight::kWdown:
        return b + "mlp.down_proj.weight";
    }
    return "";
  }

  std::string where_;
  std::vector<std::unique_ptr<SafetensorsFile>> shards_;
};

}  // namespace

std::unique_ptr<LlamaCheckpoint> open_safetensors_checkpoint(const std::string& path) {
  return std::make_unique<SafetensorsCheckpoint>(path);
}

}  // namespace inferscale
