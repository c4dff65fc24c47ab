#pragma once
// @brief FactIdMap: global fact id -> replica-local id, an open-addressing hash table of 8 bytes
// a slot, for replicas that see a small part of a large fleet's facts (a table by global id would
// cost every replica 4 bytes per fact of the whole population).
//
// The hash keeps neighbours together: the eight ids of an aligned group (a user's facts have
// consecutive ids) share one cache line of slots, so a request's lookups of one user's facts,
// and the evictions of the facts one request placed, read a few lines instead of one each.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/prefetch.h"

namespace inferscale {

class FactIdMap {
 public:
  /// local + 1 of `global`, 0 when absent.
  std::uint32_t find(std::uint64_t global) const { return probe(global).value; }
  /// find(global), and where it is absent (value 0) the slot an insertion of it takes: the
  /// first empty one of its probe run, kept by insert_at while the map does not change.
  struct Probe {
    std::uint32_t value;
    std::size_t slot;
  };
  Probe probe(std::uint64_t global) const {
    if (lines_.empty()) return {0, 0};
    const auto key = static_cast<std::uint32_t>(global) + 1;
    for (std::size_t i = slot_of(key);; i = (i + 1) & mask_) {
      const Slot& s = slot(i);
      if (s.key == key) return {s.value, i};
      if (s.key == 0) return {0, i};
    }
  }
  /// insert(global, value) of a `global` that probe(global) `p` found absent, into the slot it
  /// found unless the map grows first (a miss then places it without probing again).
  void insert_at(const Probe& p, std::uint64_t global, std::uint32_t value) {
    if (2 * (size_ + 1) > capacity()) {
      insert(global, value);
      return;
    }
    slot(p.slot) = Slot{static_cast<std::uint32_t>(global) + 1, value};
    ++size_;
  }
  /// Starts loading the slot where find(global) begins (a hint).
  void prefetch(std::uint64_t global) const {
    if (!lines_.empty()) prefetch_kept(&slot(slot_of(static_cast<std::uint32_t>(global) + 1)));
  }
  /// Maps `global` (absent; below 2^32 - 1) to `value` (local + 1, not 0).
  void insert(std::uint64_t global, std::uint32_t value) {
    if (2 * (size_ + 1) > capacity()) grow();
    place(static_cast<std::uint32_t>(global) + 1, value);
    ++size_;
  }
  /// Empties the map, then maps global_of(i) to i + 1 for each i below `n` where it is not
  /// `none`: a sweep's records left, by their ids. Each one's slot is loaded a few ids ahead, so
  /// that the misses overlap. A sweep frees about as many records as it keeps, and an insertion
  /// a record left costs less than an erasure a record freed, which walks the rest of its probe
  /// run (a user's facts fill whole lines, so runs are long).
  template <typename GlobalOf>
  void rebuild(std::size_t n, GlobalOf global_of, std::uint64_t none) {
    std::fill(lines_.begin(), lines_.end(), Line{});
    size_ = 0;
    constexpr std::size_t kAhead = 16;
    for (std::size_t i = 0; i < n; ++i) {
      if (i + kAhead < n && global_of(i + kAhead) != none) prefetch(global_of(i + kAhead));
      const std::uint64_t g = global_of(i);
      if (g != none) insert(g, static_cast<std::uint32_t>(i + 1));
    }
  }
  std::size_t size() const { return size_; }
  std::size_t bytes() const { return lines_.size() * sizeof(Line); }

 private:
  struct Slot {
    std::uint32_t key = 0;  // global + 1; 0: empty
    std::uint32_t value = 0;
  };
  static constexpr unsigned kGroupBits = 3;  // 8 slots of 8 bytes: a cache line
  static constexpr std::size_t kGroupMask = (std::size_t{1} << kGroupBits) - 1;
  struct alignas(64) Line {
    Slot slots[kGroupMask + 1];
  };
  std::size_t capacity() const { return lines_.size() << kGroupBits; }
  Slot& slot(std::size_t i) { return lines_[i >> kGroupBits].slots[i & kGroupMask]; }
  const Slot& slot(std::size_t i) const { return lines_[i >> kGroupBits].slots[i & kGroupMask]; }
  /// The home slot of `key`: its group's line by a multiplicative hash, its place in the line
  /// by the id's low bits.
  std::size_t slot_of(std::uint32_t key) const {
    const std::uint32_t id = key - 1;
    const std::uint64_t group = id >> kGroupBits;
    const auto line = static_cast<std::size_t>((group * 0x9E3779B97F4A7C15ull) >> 20);
    return ((line << kGroupBits) | (id & kGroupMask)) & mask_;
  }
  void place(std::uint32_t key, std::uint32_t value) {
    std::size_t i = slot_of(key);
    while (slot(i).key != 0) i = (i + 1) & mask_;
    slot(i) = Slot{key, value};
  }
  void grow() {
    std::vector<Line> old(lines_.empty() ? 8 : lines_.size() * 2);
    old.swap(lines_);
    mask_ = capacity() - 1;
    for (const Line& l : old) {
      for (const Slot& s : l.slots) {
        if (s.key != 0) place(s.key, s.value);
      }
    }
  }
  std::vector<Line> lines_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace inferscale
