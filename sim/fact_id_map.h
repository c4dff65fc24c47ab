#pragma once
// @brief FactIdMap: global fact id -> replica-local id, an open-addressing hash table of 8 bytes
// a slot, for replicas that see a small part of a large fleet's facts (a table by global id would
// cost every replica 4 bytes per fact of the whole population).

#include <cstdint>
#include <vector>

#include "sim/prefetch.h"

namespace inferscale {

class FactIdMap {
 public:
  /// local + 1 of `global`, 0 when absent.
  std::uint32_t find(std::uint64_t global) const {
    if (slots_.empty()) return 0;
    const auto key = static_cast<std::uint32_t>(global) + 1;
    for (std::size_t i = slot_of(key);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) return s.value;
      if (s.key == 0) return 0;
    }
  }
  /// Starts loading the slot where find(global) begins (a hint).
  void prefetch(std::uint64_t global) const {
    if (!slots_.empty())
      prefetch_kept(slots_.data() + slot_of(static_cast<std::uint32_t>(global) + 1));
  }
  /// Maps `global` (absent; below 2^32 - 1) to `value` (local + 1, not 0).
  void insert(std::uint64_t global, std::uint32_t value) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    place(static_cast<std::uint32_t>(global) + 1, value);
    ++size_;
  }
  /// Removes `global` if present (backward-shift deletion: no tombstones, so lookups stay as
  /// short as in a table that never held it).
  void erase(std::uint64_t global) {
    if (slots_.empty()) return;
    const auto key = static_cast<std::uint32_t>(global) + 1;
    std::size_t i = slot_of(key);
    while (slots_[i].key != key) {
      if (slots_[i].key == 0) return;
      i = (i + 1) & mask_;
    }
    for (std::size_t j = (i + 1) & mask_; slots_[j].key != 0; j = (j + 1) & mask_) {
      // The entry at j moves into the hole at i unless its home lies cyclically in (i, j].
      const std::size_t home = slot_of(slots_[j].key);
      const bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
      if (stays) continue;
      slots_[i] = slots_[j];
      i = j;
    }
    slots_[i] = Slot{};
    --size_;
  }
  std::size_t size() const { return size_; }
  std::size_t bytes() const { return slots_.size() * sizeof(Slot); }

 private:
  struct Slot {
    std::uint32_t key = 0;  // global + 1; 0: empty
    std::uint32_t value = 0;
  };
  std::size_t slot_of(std::uint32_t key) const {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> 20) & mask_;
  }
  void place(std::uint32_t key, std::uint32_t value) {
    std::size_t i = slot_of(key);
    while (slots_[i].key != 0) i = (i + 1) & mask_;
    slots_[i] = Slot{key, value};
  }
  void grow() {
    std::vector<Slot> old(slots_.empty() ? 64 : slots_.size() * 2);
    old.swap(slots_);
    mask_ = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.key != 0) place(s.key, s.value);
    }
  }
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace inferscale
