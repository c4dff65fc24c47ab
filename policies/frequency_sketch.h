#pragma once
// @brief FrequencySketch: TinyLFU's approximate access counts. A count-min sketch (4 rows of
// 4-bit counters, conservative update) behind a doorkeeper Bloom filter that absorbs the first
// access of each key; after `sample_size` accesses every counter is halved and the doorkeeper
// cleared, so counts describe the recent past.

#include <algorithm>
#include <cstdint>
#include <vector>

namespace inferscale {

class FrequencySketch {
 public:
  /// `width`: counters per row (rounded up to a power of two, at least 64).
  FrequencySketch(std::size_t width, std::uint64_t sample_size) { reset_size(width, sample_size); }

  /// Resizes and clears.
  void reset_size(std::size_t width, std::uint64_t sample_size) {
    width_ = 64;
    while (width_ < width) width_ *= 2;
    sample_size_ = std::max<std::uint64_t>(1, sample_size);
    counters_.assign(kRows * width_, 0);
    door_.assign(width_ / 8, 0);  // 8 doorkeeper bits per counter row entry, as 64-bit words
    additions_ = 0;
  }

  std::size_t width() const { return width_; }

  void add(std::uint64_t key) {
    if (++additions_ >= sample_size_) halve();
    const std::uint64_t h = mix(key);
    if (!door_test_and_set(h)) return;  // first sighting: only the doorkeeper learns it
    std::uint8_t* c[kRows];
    std::uint8_t low = 15;
    for (std::size_t r = 0; r < kRows; ++r) {
      c[r] = &counters_[r * width_ + index(h, r)];
      low = std::min(low, *c[r]);
    }
    if (low == 15) return;
    for (auto* p : c) {
      if (*p == low) ++*p;  // conservative update: raise only the minima
    }
  }

  /// Estimated accesses of `key` in the current sample (doorkeeper included).
  std::uint32_t estimate(std::uint64_t key) const {
    const std::uint64_t h = mix(key);
    std::uint8_t low = 15;
    for (std::size_t r = 0; r < kRows; ++r)
      low = std::min(low, counters_[r * width_ + index(h, r)]);
    return low + (door_test(h) ? 1u : 0u);
  }

 private:
  static constexpr std::size_t kRows = 4;
  static std::uint64_t mix(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
  }
  std::size_t index(std::uint64_t h, std::size_t row) const {
    // double hashing: row r uses low + r * high (odd), independent enough for a sketch
    const std::uint64_t low = h & 0xffffffffu, high = (h >> 32) | 1u;
    return static_cast<std::size_t>(low + row * high) & (width_ - 1);
  }
  // Doorkeeper: 2 bits per key in width_ * 8 bits.
  std::size_t door_bit(std::uint64_t h, int k) const {
    return static_cast<std::size_t>((h >> 17) + k * ((h >> 41) | 1u)) & (width_ * 8 - 1);
  }
  bool door_test(std::uint64_t h) const {
    for (int k = 0; k < 2; ++k) {
      const std::size_t b = door_bit(h, k);
      if ((door_[b / 64] >> (b % 64) & 1) == 0) return false;
    }
    return true;
  }
  bool door_test_and_set(std::uint64_t h) {
    bool present = true;
    for (int k = 0; k < 2; ++k) {
      const std::size_t b = door_bit(h, k);
      if ((door_[b / 64] >> (b % 64) & 1) == 0) present = false;
      door_[b / 64] |= std::uint64_t{1} << (b % 64);
    }
    return present;
  }
  void halve() {
    additions_ = 0;
    for (auto& c : counters_) c = static_cast<std::uint8_t>(c / 2);
    std::fill(door_.begin(), door_.end(), 0);
  }

  std::size_t width_ = 64;
  std::uint64_t sample_size_ = 1;
  std::uint64_t additions_ = 0;
  std::vector<std::uint8_t> counters_;  // [kRows, width_]
  std::vector<std::uint64_t> door_;     // width_ * 8 bits
};

}  // namespace inferscale
