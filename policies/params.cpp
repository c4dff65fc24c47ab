#include "policies/params.h"

#include <charconv>
#include <cmath>
#include <sstream>

namespace inferscale {

void Params::set(const std::string& name, std::string text, std::string where) {
  values_[name] = Value{std::move(text), where.empty() ? where_ + "." + name : std::move(where)};
}

double Params::number(const std::string& name, double fallback, double lo, double hi) const {
  read_.insert(name);
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const std::string& s = it->second.text;
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v)) {
    throw InputError(it->second.where,
                     "parameter '" + name + "': expected a number, got '" + s + "'");
  }
  if (v < lo || v > hi) {
    std::ostringstream os;
    os << "parameter '" << name << "': expected a value in [" << lo << ", " << hi << "], got " << s;
    throw InputError(it->second.where, os.str());
  }
  return v;
}

std::int64_t Params::integer(const std::string& name, std::int64_t fallback, std::int64_t lo,
                             std::int64_t hi) const {
  read_.insert(name);
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const std::string& s = it->second.text;
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) {
    throw InputError(it->second.where,
                     "parameter '" + name + "': expected an integer, got '" + s + "'");
  }
  if (v < lo || v > hi) {
    throw InputError(it->second.where, "parameter '" + name + "': expected an integer in [" +
                                           std::to_string(lo) + ", " + std::to_string(hi) +
                                           "], got " + s);
  }
  return v;
}

std::string Params::text(const std::string& name, const std::string& fallback,
                         const std::vector<std::string>& allowed) const {
  read_.insert(name);
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  if (allowed.empty()) return it->second.text;
  for (const auto& a : allowed) {
    if (a == it->second.text) return a;
  }
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  throw InputError(it->second.where, "parameter '" + name + "': expected one of " + list +
                                         ", got '" + it->second.text + "'");
}

void Params::reject_unknown(const std::vector<ParamInfo>& known) const {
  for (const auto& [name, value] : values_) {
    bool ok = read_.count(name) != 0;
    for (const auto& k : known) ok = ok || k.name == name;
    if (ok) continue;
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k.name;
    throw InputError(value.where, "unknown parameter '" + name +
                                      "' (known: " + (list.empty() ? "none" : list) + ")");
  }
}

}  // namespace inferscale
