// BpeTokenizer from a GGUF file's metadata or from a Hugging Face tokenizer.json.
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "executor/tokenizer/bpe_tokenizer.h"
#include "executor/weights/gguf.h"
#include "traces/error.h"

namespace inferscale {

namespace {

using Json = nlohmann::json;

PreTokenizer gguf_pre(const GgufFile& g) {
  const std::string pre =
      g.find("tokenizer.ggml.pre") ? g.get_string("tokenizer.ggml.pre") : "default";
  if (pre == "smollm" || pre == "starcoder" || pre == "refact") return PreTokenizer::kSmollm;
  if (pre == "gpt-2" || pre == "gpt2" || pre == "default") return PreTokenizer::kGpt2;
  throw InputError(g.path() + ": tokenizer.ggml.pre",
                   "'" + pre + "' (expected smollm, starcoder, refact or gpt-2)");
}

/// The pre-tokenizer a tokenizer.json describes: ByteLevel alone (GPT-2), or Digits with
/// individual digits followed by ByteLevel (SmolLM).
PreTokenizer json_pre(const Json& p, const std::string& where) {
  const auto kind = [](const Json& x) { return x.value("type", std::string()); };
  if (p.is_object() && kind(p) == "ByteLevel" && p.value("use_regex", true) &&
      !p.value("add_prefix_space", false)) {
    return PreTokenizer::kGpt2;
  }
  if (p.is_object() && kind(p) == "Sequence" && p.contains("pretokenizers")) {
    const Json& seq = p["pretokenizers"];
    if (seq.size() == 2 && kind(seq[0]) == "Digits" && seq[0].value("individual_digits", false) &&
        kind(seq[1]) == "ByteLevel" && seq[1].value("use_regex", true) &&
        !seq[1].value("add_prefix_space", false)) {
      return PreTokenizer::kSmollm;
    }
  }
  throw InputError(where + ": pre_tokenizer",
                   "expected ByteLevel, or Sequence[Digits(individual_digits), ByteLevel] "
                   "without a prefix space");
}

}  // namespace

BpeTokenizer BpeTokenizer::from_gguf(const GgufFile& g) {
  const std::string model = g.get_string("tokenizer.ggml.model");
  if (model != "gpt2") {
    throw InputError(g.path() + ": tokenizer.ggml.model",
                     "'" + model + "' (expected gpt2: byte-level BPE)");
  }
  std::vector<std::int64_t> types;
  if (g.find("tokenizer.ggml.token_type")) types = g.get_ints("tokenizer.ggml.token_type");
  try {
    BpeTokenizer t(g.get_strings("tokenizer.ggml.tokens"), g.get_strings("tokenizer.ggml.merges"),
                   types, gguf_pre(g));
    t.bos_ = std::int32_t(g.get_int("tokenizer.ggml.bos_token_id", -1));
    t.eos_ = std::int32_t(g.get_int("tokenizer.ggml.eos_token_id", -1));
    return t;
  } catch (const std::invalid_argument& e) {
    throw InputError(g.path() + ": tokenizer.ggml.merges", e.what());
  }
}

BpeTokenizer BpeTokenizer::from_tokenizer_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  Json j;
  try {
    j = Json::parse(ss.str());
  } catch (const Json::parse_error& e) {
    throw InputError(path + ": byte " + std::to_string(e.byte), "invalid JSON");
  }
  const Json& model = j.value("model", Json::object());
  if (model.value("type", std::string()) != "BPE" || !model.contains("vocab") ||
      !model["vocab"].is_object()) {
    throw InputError(path + ": model", "expected a BPE model with a vocab object");
  }
  if (j.contains("normalizer") && !j["normalizer"].is_null()) {
    throw InputError(path + ": normalizer", "expected null (normalizers are not implemented)");
  }
  std::vector<std::string> tokens(model["vocab"].size());
  for (auto it = model["vocab"].begin(); it != model["vocab"].end(); ++it) {
    const auto id = it->get<std::int64_t>();
    if (id < 0) throw InputError(path + ": model.vocab." + it.key(), "expected an id >= 0");
    if (std::size_t(id) >= tokens.size()) tokens.resize(std::size_t(id) + 1);
    tokens[std::size_t(id)] = it.key();
  }
  std::vector<std::int64_t> types(tokens.size(), 1);
  for (const Json& a : j.value("added_tokens", Json::array())) {
    const auto id = a.value("id", std::int64_t(-1));
    if (id < 0) continue;
    if (std::size_t(id) >= tokens.size()) {
      tokens.resize(std::size_t(id) + 1);
      types.resize(tokens.size(), 1);
    }
    tokens[std::size_t(id)] = a.value("content", std::string());
    types[std::size_t(id)] = a.value("special", false) ? 3 : 4;
  }
  std::vector<std::string> merges;
  for (const Json& m : model.value("merges", Json::array())) {
    if (m.is_string()) {
      merges.push_back(m.get<std::string>());
    } else if (m.is_array() && m.size() == 2) {
      merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
    } else {
      throw InputError(path + ": model.merges", "expected \"a b\" strings or [a, b] pairs");
    }
  }
  try {
    return BpeTokenizer(std::move(tokens), merges, types,
                        json_pre(j.value("pre_tokenizer", Json()), path));
  } catch (const std::invalid_argument& e) {
    throw InputError(path + ": model.merges", e.what());
  }
}

}  // namespace inferscale
