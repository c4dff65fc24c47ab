#pragma once
// @brief The YAML config of `inferscale eval fidelity` (configs/eval/README.md).

#include <string>
#include <vector>

#include "eval/fidelity.h"

namespace inferscale {

/// Reads a YAML config; InputError with file:line:column and key path on bad input. Relative
/// model and data paths are taken relative to the working directory.
FidelityConfig load_fidelity_config(const std::string& path);

/// The formats fact KV may be stored in (`kv_dtype`, `kv_reference` and their flags).
inline const std::vector<std::string>& fact_kv_formats() {
  static const std::vector<std::string> formats{"bf16", "fp8", "int8"};
  return formats;
}

}  // namespace inferscale
