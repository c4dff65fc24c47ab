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
  /// Open loop: coefficient of variation of the gaps. 1: exponential (Poisson); otherwise gamma
  /// gaps of that CV (shape 1/cv^2: bursty above 1, regular below); 0: constant gaps.
  double cv = 1.0;
};

/// Open-loop arrivals: a Poisson process of `rate_per_s` starting at `start` (the first arrival
/// is one exponential gap after it). Times are rounded to whole nanoseconds from an exact
/// running sum, so rounding does not drift.
class PoissonArrivals {
 public:
  PoissonArrivals(SimTime start, double rate_per_s, std::uint64_t seed, double cv = 1.0)
      : start_(start), mean_gap_ns_(1e9 / rate_per_s), cv_(cv), rng_(seed) {}
  SimTime next() {
    offset_ns_ += cv_ == 1.0 ? rng_.exponential(mean_gap_ns_) : gamma_gap();
    return start_ + static_cast<SimTime>(std::llround(offset_ns_));
  }

 private:
  /// A gamma gap of mean mean_gap_ns_ and CV cv_ (Marsaglia and Tsang's method, with the
  /// generator's bounded normal; shape < 1 through shape + 1 and a uniform power).
  double gamma_gap() {
    if (cv_ <= 0) return mean_gap_ns_;
    const double shape = 1.0 / (cv_ * cv_);
    const double scale = mean_gap_ns_ * cv_ * cv_;
    const double a = shape < 1 ? shape + 1 : shape;
    const double d = a - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
    double x = 0;
    while (true) {
      const double z = rng_.normal();
      const double v0 = 1 + c * z;
      if (v0 <= 0) continue;
      const double v = v0 * v0 * v0;
      const double u = rng_.uniform();
      if (u < 1 - 0.0331 * z * z * z * z ||
          std::log(std::max(u, 1e-300)) < 0.5 * z * z + d * (1 - v + std::log(v))) {
        x = d * v;
        break;
      }
    }
    if (shape < 1) x *= std::pow(std::max(rng_.uniform(), 1e-300), 1.0 / shape);
    return x * scale;
  }

  SimTime start_;
  double mean_gap_ns_;
  double cv_;
  double offset_ns_ = 0;
  Rng rng_;
};

/// Seconds (option value) to virtual nanoseconds.
inline SimTime seconds_to_ns(double s) {
  return static_cast<SimTime>(std::llround(s * 1e9));
}

}  // namespace inferscale
