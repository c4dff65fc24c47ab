#pragma once
// @brief Materializes an experiment's trace: a file as is, or a synthetic/LoCoMo trace generated
// from the options in the YAML (the same options as `inferscale trace generate|import-locomo`,
// written without dashes) into a cache file keyed by those options.

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "sim/config/experiment.h"
#include "traces/record_stream.h"

namespace inferscale {

/// @brief The folder a trace is written to, made with the missing folders above it. Unless keep()
/// is called, they are removed again (innermost first, each only while empty): a trace that did
/// not fit leaves no folder behind, only those that were there before.
class TraceFolder {
 public:
  /// An InputError at `dir` when it cannot be made.
  explicit TraceFolder(const std::filesystem::path& dir);
  ~TraceFolder();
  TraceFolder(const TraceFolder&) = delete;
  TraceFolder& operator=(const TraceFolder&) = delete;
  /// The trace is written: the folders stay.
  void keep() { made_.clear(); }

 private:
  /// Innermost first, each only while empty.
  void remove_made();
  std::filesystem::path dir_, made_;  // made_: the outermost folder made here (empty: none)
};

/// Returns the path of a JSONL trace for `run` (generating it once if needed). Option errors are
/// InputErrors at the YAML position of the option.
std::string materialize_trace(const RunConfig& run, const std::string& cache_dir);
/// A generated trace (`generate:` without `write_trace: true`) as a stream that is never
/// written: facts derived per user when first needed, or at t=0 with `eager_facts` (a warm
/// store is filled in the trace's order): then only the users of the warm window where `run`'s
/// tiers allow one (sim/warm_window.h), the others' when first needed. Empty for other kinds
/// (materialize_trace then).
/// `keep_user` (if set): only these users' requests carry their facts (SyntheticStream).
std::function<std::unique_ptr<RecordStream>()> streamed_trace(
    const RunConfig& run, bool eager_facts, std::function<bool(std::uint64_t user)> keep_user = {});
/// Checks the generate/locomo options without generating anything.
void check_trace_source(const RunConfig& run);

}  // namespace inferscale
