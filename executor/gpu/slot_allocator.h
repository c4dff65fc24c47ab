#pragma once
// @brief First-fit allocator of contiguous row ranges of the KV cache: each running request
// owns one range, so attention reads its KV in place (varlen, no per-step gather).

#include <cstdint>
#include <map>

namespace inferscale {

class SlotAllocator {
 public:
  explicit SlotAllocator(std::int32_t rows);
  /// First row of a free range of `count` rows, or -1 when no range fits.
  std::int32_t allocate(std::int32_t count);
  /// Returns a range (as allocated) to the free list, merging neighbours.
  void free(std::int32_t start, std::int32_t count);
  std::int32_t rows() const { return rows_; }
  std::int32_t free_rows() const { return free_rows_; }
  /// The largest range allocate() can currently return.
  std::int32_t largest_free() const;

 private:
  std::int32_t rows_;
  std::int32_t free_rows_;
  std::map<std::int32_t, std::int32_t> free_;  // start -> length, disjoint, not adjacent
};

}  // namespace inferscale
