#pragma once
// @brief IdList: an intrusive doubly linked list over dense fact ids, O(1) everything, no
// allocation per operation. The building block of the queue-based policies.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "traces/types.h"

namespace inferscale {

class IdList {
 public:
  static constexpr std::uint32_t kNil = 0xffffffffu;

  bool contains(FactId id) const { return id < linked_.size() && linked_[id]; }
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  /// Most recently pushed end.
  std::uint32_t front() const { return head_; }
  /// Oldest end.
  std::uint32_t back() const { return tail_; }
  std::uint32_t next_toward_front(std::uint32_t id) const { return prev_[id]; }
  std::uint32_t next_toward_back(std::uint32_t id) const { return next_[id]; }

  void push_front(FactId id) {
    grow(id);
    const auto i = static_cast<std::uint32_t>(id);
    prev_[i] = kNil;
    next_[i] = head_;
    if (head_ != kNil) prev_[head_] = i;
    head_ = i;
    if (tail_ == kNil) tail_ = i;
    linked_[i] = 1;
    ++size_;
  }

  void erase(FactId id) {
    const auto i = static_cast<std::uint32_t>(id);
    if (prev_[i] != kNil) next_[prev_[i]] = next_[i]; else head_ = next_[i];
    if (next_[i] != kNil) prev_[next_[i]] = prev_[i]; else tail_ = prev_[i];
    linked_[i] = 0;
    --size_;
  }

  void move_to_front(FactId id) {
    if (head_ == static_cast<std::uint32_t>(id)) return;
    erase(id);
    push_front(id);
  }

 private:
  void grow(FactId id) {
    if (id >= prev_.size()) {
      const std::size_t n = std::max<std::size_t>(id + 1, prev_.size() * 2);
      prev_.resize(n, kNil);
      next_.resize(n, kNil);
      linked_.resize(n, 0);
    }
  }

  std::vector<std::uint32_t> prev_, next_;
  std::vector<std::uint8_t> linked_;
  std::uint32_t head_ = kNil, tail_ = kNil;
  std::size_t size_ = 0;
};

}  // namespace inferscale
