#pragma once
// @brief IdRing: a growable ring buffer (a double-ended queue) of 32-bit values addressed by
// absolute positions. The queues of FIFO-like policies are rings of fact ids: pushing and popping
// touch consecutive memory, where a linked list touches one node per fact anywhere in memory.

#include <cstdint>
#include <vector>

namespace inferscale {

/// @brief Values at positions [begin(), end()); positions only grow (push_front excepted), so a
/// position stays valid as long as its value is in the ring.
template <class T = std::uint32_t>
class IdRing {
 public:
  bool empty() const { return begin_ == end_; }
  std::size_t size() const { return static_cast<std::size_t>(end_ - begin_); }
  std::uint64_t begin() const { return begin_; }
  std::uint64_t end() const { return end_; }
  T& operator[](std::uint64_t pos) { return slots_[pos & mask_]; }
  const T& operator[](std::uint64_t pos) const { return slots_[pos & mask_]; }
  T& front() { return (*this)[begin_]; }
  const T& front() const { return (*this)[begin_]; }

  void push_back(const T& v) {
    if (size() == slots_.size()) grow();
    (*this)[end_++] = v;
  }
  void push_front(const T& v) {
    if (size() == slots_.size()) grow();
    (*this)[--begin_] = v;
  }
  void pop_front() { ++begin_; }
  void clear() { begin_ = end_ = kOrigin; }

 private:
  // Positions start far from 0 so that push_front never wraps below it.
  static constexpr std::uint64_t kOrigin = std::uint64_t{1} << 62;
  void grow() {
    const std::size_t n = slots_.empty() ? 1024 : slots_.size() * 2;
    std::vector<T> next(n);
    for (std::uint64_t p = begin_; p != end_; ++p) next[p & (n - 1)] = (*this)[p];
    slots_.swap(next);
    mask_ = n - 1;
  }

  std::vector<T> slots_;
  std::uint64_t mask_ = 0;
  std::uint64_t begin_ = kOrigin, end_ = kOrigin;
};

}  // namespace inferscale
