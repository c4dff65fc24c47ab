#pragma once
// @brief prefetch_kept: a cache-line prefetch the compiler keeps.

namespace inferscale {

/// Starts loading the cache line of `p` for reading (a hint). GCC deletes a loop whose body is
/// only __builtin_prefetch calls and drops them from loops it vectorizes; this one stays where
/// it is written.
inline void prefetch_kept(const void* p) {
#if defined(__x86_64__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}

}  // namespace inferscale
