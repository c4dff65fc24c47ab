#pragma once
// @brief The probe cache: one small file per probe in `<plan>/cache/`, named by the hash of the
// probe's resolved configuration and holding that configuration, written to a temporary name
// and renamed, so an interrupted plan leaves only whole entries. Several processes (or MPI
// ranks on a shared folder) may write it at once: an entry is the same whoever writes it.

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "plan/probe.h"

namespace inferscale::plan {

/// 64-bit FNV-1a of `text` (stable across builds and machines), as 16 hex digits.
std::string probe_hash(const std::string& text);

/// A probe's result as one JSON object (`config` is added by the cache), and back: what a
/// cache entry holds and what a distributed worker sends. Doubles round-trip exactly.
nlohmann::json probe_result_json(const ProbeResult& r);
/// The result in `j` (an exception when a field is missing or of the wrong type).
ProbeResult probe_result_from_json(const nlohmann::json& j);

class ProbeCache {
 public:
  /// `dir` is created when the first entry is written; temporary files that an interrupted
  /// process left there are removed.
  explicit ProbeCache(std::filesystem::path dir);
  /// The stored result of `task` (checked against its full configuration), if any.
  std::optional<ProbeResult> find(const ProbeTask& task) const;
  void store(const ProbeTask& task, const ProbeResult& result) const;
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

}  // namespace inferscale::plan
