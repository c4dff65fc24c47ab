#pragma once
// @brief Materializes an experiment's trace: a file as is, or a synthetic/LoCoMo trace generated
// from the options in the YAML (the same options as `inferscale trace generate|import-locomo`,
// written without dashes) into a cache file keyed by those options.

#include <string>

#include "sim/config/experiment.h"

namespace inferscale {

/// Returns the path of a JSONL trace for `run` (generating it once if needed). Option errors are
/// InputErrors at the YAML position of the option.
std::string materialize_trace(const RunConfig& run, const std::string& cache_dir);
/// Checks the generate/locomo options without generating anything.
void check_trace_source(const RunConfig& run);

}  // namespace inferscale
