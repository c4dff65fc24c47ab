#pragma once
// @brief What the trace producers (LoCoMo importer, synthetic generator) share: token counts
// from word counts, and request arrivals (open-loop Poisson or closed loop).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>

#include "traces/prng.h"
#include "traces/trace.h"
#include "traces/types.h"

namespace inferscale {

/// Words of `s`: maximal runs of non-whitespace bytes.
inline std::uint32_t count_words(std::string_view s) {
  std::uint32_t n = 0;
  bool in_word = false;
  for (const char c : s) {
    const bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r';
    if (!space && !in_word) ++n;
    in_word = !space;
  }
  return n;
}

/// Tokens of a text of `words` words, until a real tokenizer exists: round(words * ratio), >= 1.
inline std::uint32_t tokens_for_words(std::uint32_t words, double tokens_per_word) {
  const auto t = std::llround(static_cast<double>(words) * tokens_per_word);
  return static_cast<std::uint32_t>(std::max<long long>(1, t));
}

struct ArrivalOptions {
  ArrivalMode mode = ArrivalMode::kOpen;
  double rate_per_s = 10.0;       // open loop: total requests per second (Poisson)
  std::uint32_t concurrency = 0;  // closed loop: users with a request in flight; 0: every user
  double think_time_s = 0.0;      // closed loop: pause between an answer and the next question
};

/// Open-loop arrivals: a Poisson process of `rate_per_s` starting at `start` (the first arrival
/// is one exponential gap after it). Times are rounded to whole nanoseconds from an exact
/// running sum, so rounding does not drift.
class PoissonArrivals {
 public:
  PoissonArrivals(SimTime start, double rate_per_s, std::uint64_t seed)
      : start_(start), mean_gap_ns_(1e9 / rate_per_s), rng_(seed) {}
  SimTime next() {
    offset_ns_ += rng_.exponential(mean_gap_ns_);
    return start_ + static_cast<SimTime>(std::llround(offset_ns_));
  }

 private:
  SimTime start_;
  double mean_gap_ns_;
  double offset_ns_ = 0;
  Rng rng_;
};

/// Seconds (option value) to virtual nanoseconds.
inline SimTime seconds_to_ns(double s) {
  return static_cast<SimTime>(std::llround(s * 1e9));
}

}  // namespace inferscale
