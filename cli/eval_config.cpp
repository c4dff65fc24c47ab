// The YAML of `inferscale eval fidelity` (the keys are documented in configs/eval/README.md),
// read here in the CLI so that eval/ depends on the executor only, not on the simulator's config.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cli/eval_config.h"
#include "sim/config/yaml_view.h"

namespace inferscale {

namespace {

std::vector<std::uint32_t> uints(const YamlView& v, const std::string& key,
                                 std::vector<std::uint32_t> fallback, std::uint32_t lo,
                                 std::uint32_t hi) {
  if (!v.has(key)) return fallback;
  const YAML::Node n = v.node(key);
  if (!n.IsSequence() || n.size() == 0) v.fail(key, "expected a non-empty list of integers");
  std::vector<std::uint32_t> out;
  for (std::size_t i = 0; i < n.size(); ++i) {
    long long x = -1;
    try {
      x = n[i].as<long long>();
    } catch (const YAML::Exception&) {
      v.fail(key, "expected integers, got '" + n[i].Scalar() + "'");
    }
    if (x < lo || x > hi) {
      v.fail(key, "expected integers in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                      "], got " + std::to_string(x));
    }
    if (std::find(out.begin(), out.end(), std::uint32_t(x)) != out.end()) {
      v.fail(key, "duplicate value " + std::to_string(x));
    }
    out.push_back(std::uint32_t(x));
  }
  return out;
}

RecomputeSetting recompute_item(const YamlView& list_owner, const YAML::Node& item) {
  const std::string where = list_owner.where("recompute");
  if (!item.IsMap() || item.size() != 1) {
    throw InputError(where, "each recompute entry is {first_tokens: n} or {ratio: r}");
  }
  const std::string key = item.begin()->first.as<std::string>();
  const YAML::Node value = item.begin()->second;
  RecomputeSetting s;
  try {
    if (key == "first_tokens") {
      const long long n = value.as<long long>();
      if (n < 1 || n > 64) throw InputError(where, "first_tokens: expected 1..64");
      s.kind = RecomputeSetting::Kind::kFirstTokens;
      s.first_tokens = std::uint32_t(n);
      return s;
    }
    if (key == "ratio") {
      const double r = value.as<double>();
      if (!(r > 0 && r < 1)) throw InputError(where, "ratio: expected a fraction in (0, 1)");
      s.kind = RecomputeSetting::Kind::kRatio;
      s.ratio = r;
      return s;
    }
  } catch (const YAML::Exception&) {
    throw InputError(where, key + ": expected a number");
  }
  throw InputError(where, "unknown recompute kind '" + key + "' (expected first_tokens or ratio)");
}

}  // namespace

FidelityConfig load_fidelity_config(const std::string& path) {
  const YamlView root({{load_yaml_file(path), path}}, "");
  root.reject_unknown({"model",
                       "data",
                       "device",
                       "dtype",
                       "rope",
                       "kv_dtype",
                       "k",
                       "w",
                       "questions",
                       "categories",
                       "answer_tokens",
                       "batch",
                       "recompute",
                       "recompute_w",
                       "recompute_layer",
                       "exactness",
                       "system_prompt",
                       "out",
                       "agreement_words",
                       "kv_reference"});
  FidelityConfig c;
  c.source = path;
  c.model = root.text("model", "");
  if (c.model.empty()) root.fail("model", "expected the path of a GGUF or safetensors checkpoint");
  c.data = root.text("data", "");  // "": the usual search, when the run starts
  c.data_where = root.where("data");
  c.device = root.choice("device", c.device, {"cpu", "cuda"});
  c.dtype = root.choice("dtype", c.device == "cuda" ? "bf16" : "f32", {"f32", "bf16", "f16"});
  c.rope = root.choice("rope", c.rope, {"pre_rope", "delta"});
  if (root.has("kv_dtype")) c.kv_dtype = root.choice("kv_dtype", "bf16", fact_kv_formats());
  if (root.has("kv_reference")) {
    c.kv_reference = root.choice("kv_reference", "bf16", fact_kv_formats());
  }
  c.agreement_words = std::uint32_t(root.integer("agreement_words", c.agreement_words, 1, 64));
  c.ks = uints(root, "k", c.ks, 1, 200);
  c.windows = uints(root, "w", c.windows, 0, 200);
  c.questions = std::uint32_t(root.integer("questions", 0, 0, 100000));
  std::vector<std::uint32_t> cats = uints(root, "categories", {1, 2, 3, 4}, 1, 4);
  c.categories.assign(cats.begin(), cats.end());
  c.answer_tokens = std::uint32_t(root.integer("answer_tokens", c.answer_tokens, 1, 256));
  c.batch = std::uint32_t(root.integer("batch", c.batch, 1, 4096));
  if (root.has("recompute")) {
    const YAML::Node list = root.node("recompute");
    if (!list.IsSequence())
      root.fail("recompute", "expected a list of {first_tokens: n} or {ratio: r}");
    for (std::size_t i = 0; i < list.size(); ++i)
      c.recompute.push_back(recompute_item(root, list[i]));
  }
  c.recompute_windows = uints(root, "recompute_w", {}, 0, 200);
  for (std::uint32_t w : c.recompute_windows) {
    if (std::find(c.windows.begin(), c.windows.end(), w) == c.windows.end()) {
      root.fail("recompute_w", "window " + std::to_string(w) + " is not in w");
    }
  }
  c.recompute_layer = std::uint32_t(root.integer("recompute_layer", c.recompute_layer, 0, 1000));
  c.exactness = root.boolean("exactness", c.exactness);
  c.system_prompt = root.text("system_prompt", c.system_prompt);
  c.out = root.text("out", c.out);
  std::sort(c.ks.begin(), c.ks.end());
  return c;
}

}  // namespace inferscale
