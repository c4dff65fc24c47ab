#pragma once
// @brief Calibration profiles on disk (configs/profiles/<gpu>-<model>.yaml): the YAML a
// CalibrationProfile is written as, and its loader with positioned errors.

#include <string>

#include "executor/cost_model/calibrated.h"
#include "executor/model_config.h"

namespace inferscale {

/// The profile file format version this build writes and reads.
inline constexpr int kProfileFormat = 1;

/// A profile name ("h200-llama-3.1-8b": configs/profiles/<name>.yaml) or a path.
std::string profile_path(const std::string& name_or_path);

/// Reads a profile. InputError at file:line:column with the key path for a missing, unknown or
/// out-of-range key, another format or feature version; `where` positions a missing file.
CalibrationProfile load_profile(const std::string& name_or_path, const std::string& where);

/// The profile as YAML (numbers in their shortest exact form: it reads back identically).
std::string profile_yaml(const CalibrationProfile& profile);

/// Writes the profile to a temporary name beside `path`, then renames it.
void write_profile(const std::string& path, const CalibrationProfile& profile);

/// InputError at `where` when the profile was calibrated for another model (both named).
void check_profile_model(const CalibrationProfile& profile, const std::string& path,
                         const ModelConfig& model, const std::string& where);

}  // namespace inferscale
