#include "traces/arrival_replay.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <optional>

#include "traces/error.h"

namespace inferscale {

namespace {

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  bool quoted = false;
  for (const char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.push_back(cell);
      cell.clear();
    } else if (c != '\r') {
      cell += c;
    }
  }
  out.push_back(cell);
  return out;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::erase_if(s, [](char c) { return c == '_' || c == ' '; });
  return s;
}

/// Days from 1970-01-01 to y-m-d (proleptic Gregorian).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + std::int64_t(doe) - 719468;
}

/// Nanoseconds since the epoch of "YYYY-MM-DD HH:MM:SS[.frac]", or of a number of seconds;
/// nullopt if neither. The date and the time of day are kept apart so that nanoseconds survive.
std::optional<std::int64_t> parse_time_ns(const std::string& s) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, n = 0;
  double sec = 0;
  if (std::sscanf(s.c_str(), "%d-%d-%d%*[ T]%d:%d:%lf%n", &y, &mo, &d, &h, &mi, &sec, &n) == 6 &&
      mo >= 1 && mo <= 12 && d >= 1 && d <= 31) {
    return days_from_civil(y, unsigned(mo), unsigned(d)) * 86400 * 1000000000ll +
           std::llround((h * 3600.0 + mi * 60.0 + sec) * 1e9);
  }
  try {
    std::size_t used = 0;
    const double v = std::stod(s, &used);
    if (used == s.size() && std::isfinite(v) && std::abs(v) < 9e9) return std::llround(v * 1e9);
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

}  // namespace

std::vector<ReplayedRequest> read_arrival_csv(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw InputError(path, "cannot read the arrival trace");
  std::string line;
  if (!std::getline(f, line)) throw InputError(path + ":1", "empty file: expected a header");
  const auto head = split_csv(line);
  auto column = [&](const char* name) {
    for (std::size_t i = 0; i < head.size(); ++i) {
      if (lower(head[i]) == name) return i;
    }
    throw InputError(path + ":1", std::string("no column ") + name +
                                      " (expected TIMESTAMP, ContextTokens, GeneratedTokens)");
  };
  const auto ct = column("timestamp"), cc = column("contexttokens"), cg = column("generatedtokens");
  std::vector<ReplayedRequest> out;
  std::int64_t first = 0, last = 0;
  for (long n = 2; std::getline(f, line); ++n) {
    if (line.empty() || line == "\r") continue;
    const auto cells = split_csv(line);
    const std::string where = path + ":" + std::to_string(n);
    if (cells.size() < head.size())
      throw InputError(where, "expected " + std::to_string(head.size()) + " columns");
    const auto parsed = parse_time_ns(cells[ct]);
    if (!parsed)
      throw InputError(where,
                       "TIMESTAMP '" + cells[ct] + "' is not a date-time or a number of seconds");
    auto tokens = [&](std::size_t i, const char* name) {
      try {
        std::size_t used = 0;
        const long long v = std::stoll(cells[i], &used);
        if (used == cells[i].size() && v >= 0 && v <= (1ll << 24)) return std::uint32_t(v);
      } catch (const std::exception&) {
      }
      throw InputError(where,
                       std::string(name) + " '" + cells[i] + "' is not a token count in [0, 2^24]");
    };
    ReplayedRequest r;
    r.context_tokens = tokens(cc, "ContextTokens");
    r.generated_tokens = tokens(cg, "GeneratedTokens");
    const std::int64_t t = *parsed;
    if (out.empty()) first = last = t;
    if (t < last) throw InputError(where, "rows out of time order");
    last = t;
    r.time_ns = t - first;
    out.push_back(r);
  }
  if (out.empty()) throw InputError(path, "no rows after the header");
  return out;
}

}  // namespace inferscale
