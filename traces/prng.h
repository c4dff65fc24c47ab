#pragma once
// @brief Rng: a fixed pseudo-random generator (xoshiro256**, seeded by splitmix64) and the few
// draws the trace tools need. std:: distributions are avoided on purpose: their output differs
// between standard libraries, and a trace must be the same bytes for the same seed.

#include <cmath>
#include <cstdint>

namespace inferscale {

/// splitmix64 step: also a good 64-bit mixer for deriving independent seeds.
inline std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Seed of an independent stream `stream` derived from `seed` (e.g. one per user).
inline std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
  std::uint64_t s = seed ^ (stream * 0xD1B54A32D192ED03ull);
  splitmix64(s);
  return splitmix64(s);
}

class Rng {
 public:
  explicit Rng(std::uint64_t seed) {
    std::uint64_t s = seed;
    for (auto& w : s_) w = splitmix64(s);
  }

  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  /// Uniform in [0, 1), 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  /// Uniform integer in [0, n), n >= 1 (multiply-shift, bias below 2^-32 for n < 2^32).
  std::uint64_t below(std::uint64_t n) {
    __extension__ using U128 = unsigned __int128;
    return static_cast<std::uint64_t>((static_cast<U128>(next()) * n) >> 64);
  }

  /// Exponential with the given mean.
  double exponential(double mean) { return -std::log1p(-uniform()) * mean; }

  /// Approximately normal (Irwin-Hall sum of 12 uniforms minus 6): mean 0, sd 1, |z| <= 6.
  /// Only additions, so it is the same on every platform.
  double normal() {
    double z = -6.0;
    for (int i = 0; i < 12; ++i) z += uniform();
    return z;
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

/// Fisher-Yates shuffle with our generator.
template <class Vec>
void shuffle(Vec& v, Rng& rng) {
  for (std::size_t i = v.size(); i > 1; --i) {
    const auto j = static_cast<std::size_t>(rng.below(i));
    using std::swap;
    swap(v[i - 1], v[j]);
  }
}

}  // namespace inferscale
