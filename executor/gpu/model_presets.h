#pragma once
// @brief Model shapes by preset name (configs/models/<name>.yaml, their one source) or custom
// dimensions given on a command line.

#include <optional>
#include <string>
#include <vector>

#include "executor/model_config.h"

namespace inferscale {

/// The preset called `name` (a file of configs/models/: llama-3.1-8b, mistral-7b, ...), if any.
std::optional<ModelConfig> model_preset(const std::string& name);

/// Names of all presets (the files of configs/models/), sorted.
std::vector<std::string> model_preset_names();

/// A preset name, or "custom:key=value,..." with keys layers, hidden, heads, kv_heads, head_dim,
/// ffn, vocab, rope_theta (optional), rope_style (neox|gptj, optional). Throws InputError
/// (where: `where`) naming what was expected.
ModelConfig parse_model_spec(const std::string& spec, const std::string& where);

}  // namespace inferscale
