#pragma once
// @brief CPU reference of the L2 prefetch (kernels/l2_prefetch.cu): what it touches and what it
// changes (nothing).

#include <cstddef>
#include <cstdint>

namespace inferscale {

/// The cache line the prefetch works in.
inline constexpr std::size_t kL2LineBytes = 128;

/// The lines a prefetch of [p, p + bytes) touches: `count` lines from `first` (p rounded down to
/// a line); none for an empty range.
struct L2Lines {
  const void* first = nullptr;
  std::size_t count = 0;
};
inline L2Lines l2_lines(const void* p, std::size_t bytes) {
  if (bytes == 0 || p == nullptr) return {};
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t first = a & ~std::uintptr_t(kL2LineBytes - 1);
  return {reinterpret_cast<const void*>(first),
          (a + bytes - first + kL2LineBytes - 1) / kL2LineBytes};
}

/// The prefetch's effect on memory: none (a cache hint).
void l2_prefetch_reference(const void* p, std::size_t bytes);

}  // namespace inferscale
