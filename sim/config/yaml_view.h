#pragma once
// @brief YamlView: typed, positioned reads from layered YAML (a run's overrides over the
// experiment's base, `--set` over both), so every error names file:line:column and key path.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "traces/error.h"

namespace inferscale {

/// One source of YAML: a document node and the name to print for it ("x.yaml", or the flag
/// "--set key=value" it came from).
struct YamlLayer {
  YAML::Node node;
  std::string source;
};

/// A map-valued view at a key path across layers; the first layer that has a key wins.
class YamlView {
 public:
  YamlView(std::vector<YamlLayer> layers, std::string path);

  const std::string& path() const { return path_; }
  bool has(const std::string& key) const;
  /// Sub-map view; layers where `key` is absent are skipped, and a map hides the layers below
  /// it whose value is not a map. Error if the winning value is not a map.
  YamlView child(const std::string& key) const;
  /// Position of `key`'s value (or of this map when absent): "file:line:col: path.key".
  std::string where(const std::string& key) const;
  std::string where() const;

  std::string text(const std::string& key, const std::string& fallback) const;
  std::string choice(const std::string& key, const std::string& fallback,
                     const std::vector<std::string>& allowed) const;
  double number(const std::string& key, double fallback, double lo, double hi) const;
  std::int64_t integer(const std::string& key, std::int64_t fallback, std::int64_t lo,
                       std::int64_t hi) const;
  bool boolean(const std::string& key, bool fallback) const;
  /// Sizes: 123, "40GiB", "141GB", "512MiB"; "30%" is a fraction of `whole_bytes` when given.
  std::uint64_t bytes(const std::string& key, std::uint64_t fallback,
                      std::optional<std::uint64_t> whole_bytes = std::nullopt) const;
  /// The raw scalar text (for Params); throws if not a scalar.
  std::string scalar(const std::string& key) const;
  /// Keys present in any layer, in first-seen order.
  std::vector<std::string> keys() const;
  /// Fails on the first key not in `allowed`, listing the allowed keys.
  void reject_unknown(const std::vector<std::string>& allowed) const;
  /// True if the value at `key` is a map / a sequence / a scalar (in the winning layer).
  bool is_map(const std::string& key) const;
  bool is_sequence(const std::string& key) const;
  /// The winning layer's node for `key` (undefined node when absent).
  YAML::Node node(const std::string& key) const;
  const std::vector<YamlLayer>& layers() const { return layers_; }

  [[noreturn]] void fail(const std::string& key, const std::string& message) const;

 private:
  /// A map key as a name; an InputError at the key when it is a map or a list.
  std::string key_name(const YAML::Node& key, const std::string& source) const;
  const YamlLayer* find(const std::string& key) const;
  std::string key_path(const std::string& key) const;

  std::vector<YamlLayer> layers_;
  std::string path_;
};

/// "file:line:column" of a node (1-based), or just the file when the node has no mark.
std::string yaml_position(const YAML::Node& node, const std::string& source);

/// Loads a YAML file; syntax errors become InputError with the position.
YAML::Node load_yaml_file(const std::string& path);

}  // namespace inferscale
