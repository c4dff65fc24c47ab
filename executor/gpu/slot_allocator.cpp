#include "executor/gpu/slot_allocator.h"

#include <algorithm>
#include <stdexcept>

#include "traces/error.h"

namespace inferscale {

SlotAllocator::SlotAllocator(std::int32_t rows) : rows_(rows), free_rows_(rows) {
  if (rows > 0) free_[0] = rows;
}

std::int32_t SlotAllocator::allocate(std::int32_t count) {
  if (count <= 0) throw std::invalid_argument("SlotAllocator::allocate: count must be positive");
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < count) continue;
    const std::int32_t start = it->first, rest = it->second - count;
    free_.erase(it);
    if (rest > 0) free_[start + count] = rest;
    free_rows_ -= count;
    return start;
  }
  return -1;
}

void SlotAllocator::free(std::int32_t start, std::int32_t count) {
  if (count <= 0 || start < 0 || start + count > rows_) {
    throw std::invalid_argument("SlotAllocator::free: range outside the cache");
  }
  auto next = free_.lower_bound(start);
  INFERSCALE_ASSERT(next == free_.end() || next->first >= start + count, "double free");
  std::int32_t s = start, n = count;
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    INFERSCALE_ASSERT(prev->first + prev->second <= start, "double free");
    if (prev->first + prev->second == start) {
      s = prev->first;
      n += prev->second;
      free_.erase(prev);
    }
  }
  if (next != free_.end() && next->first == start + count) {
    n += next->second;
    free_.erase(next);
  }
  free_[s] = n;
  free_rows_ += count;
}

std::int32_t SlotAllocator::largest_free() const {
  std::int32_t best = 0;
  for (const auto& [start, len] : free_) best = std::max(best, len);
  return best;
}

}  // namespace inferscale
