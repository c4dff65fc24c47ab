#pragma once
// @brief The YAML config of `inferscale eval fidelity` (configs/eval/README.md).

#include <string>

#include "eval/fidelity.h"

namespace inferscale {

/// Reads a YAML config; InputError with file:line:column and key path on bad input. Relative
/// model and data paths are taken relative to the working directory.
FidelityConfig load_fidelity_config(const std::string& path);

}  // namespace inferscale
