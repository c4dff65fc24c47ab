#pragma once
// @brief Model shapes of the cost model's presets (from each model's published config.json),
// and custom dimensions given on a command line.

#include <optional>
#include <string>
#include <vector>

#include "executor/model_config.h"

namespace inferscale {

/// The preset called `name` (llama-3.1-8b, mistral-7b, qwen2.5-7b, smollm2-135m), if any.
std::optional<ModelConfig> model_preset(const std::string& name);

/// Names of all presets.
std::vector<std::string> model_preset_names();

/// A preset name, or "custom:key=value,..." with keys layers, hidden, heads, kv_heads, head_dim,
/// ffn, vocab, rope_theta (optional), rope_style (neox|gptj, optional). Throws InputError
/// (where: `where`) naming what was expected.
ModelConfig parse_model_spec(const std::string& spec, const std::string& where);

}  // namespace inferscale
