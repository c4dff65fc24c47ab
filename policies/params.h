#pragma once
// @brief Params: a policy's YAML parameters, typed on read, with the key path in every error.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "traces/error.h"

namespace inferscale {

/// One documented parameter of a policy (listed by `inferscale policies`).
struct ParamInfo {
  std::string name;
  std::string default_value;
  std::string description;
};

/// Scalar parameters as written in the config, each with the position it came from.
class Params {
 public:
  struct Value {
    std::string text;
    std::string where;  // "file:line:column" of the value
  };

  Params() = default;
  /// `where` names the params map itself, for "unknown parameter" errors.
  explicit Params(std::string where) : where_(std::move(where)) {}

  void set(const std::string& name, std::string text, std::string where = {});
  bool has(const std::string& name) const { return values_.count(name) != 0; }

  /// A number in [lo, hi]; `fallback` when absent. Throws InputError otherwise.
  double number(const std::string& name, double fallback, double lo, double hi) const;
  /// An integer in [lo, hi]; `fallback` when absent.
  std::int64_t integer(const std::string& name, std::int64_t fallback, std::int64_t lo,
                       std::int64_t hi) const;
  /// A string from `allowed` (any string when `allowed` is empty).
  std::string text(const std::string& name, const std::string& fallback,
                   const std::vector<std::string>& allowed = {}) const;
  /// Fails on any parameter not read so far, listing the known ones.
  void reject_unknown(const std::vector<ParamInfo>& known) const;

  const std::map<std::string, Value>& values() const { return values_; }
  const std::string& where() const { return where_; }

 private:
  std::string where_;
  std::map<std::string, Value> values_;
  mutable std::set<std::string> read_;
};

}  // namespace inferscale
