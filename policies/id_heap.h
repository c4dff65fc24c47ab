#pragma once
// @brief IdHeap: an indexed binary heap over dense fact ids. The top is the first candidate for
// eviction; keys can be updated in O(log n); first_unpinned() finds the best candidate that a
// predicate does not exclude, without modifying the heap.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "traces/types.h"

namespace inferscale {

/// `Before(a, b)`: key a is evicted before key b. Equal keys: the smaller id first.
template <class Key, class Before = std::less<Key>>
class IdHeap {
 public:
  static constexpr std::uint32_t kAbsent = 0xffffffffu;

  /// `shared_pos`: a position table shared by several heaps over one id space (an id in at most
  /// one of them); null: the heap keeps its own.
  explicit IdHeap(std::vector<std::uint32_t>* shared_pos = nullptr)
      : pos_(shared_pos != nullptr ? shared_pos : &own_pos_) {}
  IdHeap(const IdHeap&) = delete;
  IdHeap& operator=(const IdHeap&) = delete;
  IdHeap(IdHeap&& o) noexcept { *this = std::move(o); }
  IdHeap& operator=(IdHeap&& o) noexcept {
    const bool own = o.pos_ == &o.own_pos_;
    items_ = std::move(o.items_);
    own_pos_ = std::move(o.own_pos_);
    pos_ = own ? &own_pos_ : o.pos_;
    return *this;
  }

  bool empty() const { return items_.empty(); }
  std::size_t size() const { return items_.size(); }
  bool contains(FactId id) const { return id < pos_->size() && (*pos_)[id] != kAbsent; }
  FactId top() const { return items_.front().id; }
  const Key& key(FactId id) const { return items_[(*pos_)[id]].key; }

  /// Inserts `id` or updates its key.
  void set(FactId id, const Key& key) {
    if (contains(id)) {
      const std::uint32_t i = (*pos_)[id];
      const bool earlier = before(Item{key, static_cast<std::uint32_t>(id)}, items_[i]);
      items_[i].key = key;
      earlier ? up(i) : down(i);
      return;
    }
    if (id >= pos_->size()) pos_->resize(std::max<std::size_t>(id + 1, pos_->size() * 2), kAbsent);
    items_.push_back(Item{key, static_cast<std::uint32_t>(id)});
    (*pos_)[id] = static_cast<std::uint32_t>(items_.size() - 1);
    up(static_cast<std::uint32_t>(items_.size() - 1));
  }

  void erase(FactId id) {
    const std::uint32_t i = (*pos_)[id];
    (*pos_)[id] = kAbsent;
    const auto last = static_cast<std::uint32_t>(items_.size() - 1);
    if (i != last) {
      items_[i] = items_[last];
      (*pos_)[items_[i].id] = i;
      items_.pop_back();
      if (i > 0 && before(items_[i], items_[(i - 1) / 2]))
        up(i);
      else
        down(i);
    } else {
      items_.pop_back();
    }
  }

  /// The first id in heap order for which `excluded(id)` is false. Best-first search: O(1) when
  /// the top qualifies, O(m log m) when m better candidates are excluded.
  template <class Excluded>
  std::optional<FactId> first_unpinned(const Excluded& excluded) const {
    if (items_.empty()) return std::nullopt;
    if (!excluded(items_[0].id)) return items_[0].id;
    frontier_.clear();
    frontier_.push_back(0);
    const auto worse = [this](std::uint32_t a, std::uint32_t b) {
      return before(items_[b], items_[a]);
    };
    while (!frontier_.empty()) {
      std::pop_heap(frontier_.begin(), frontier_.end(), worse);
      const std::uint32_t i = frontier_.back();
      frontier_.pop_back();
      if (!excluded(items_[i].id)) return items_[i].id;
      for (std::uint32_t c = 2 * i + 1; c <= 2 * i + 2 && c < items_.size(); ++c) {
        frontier_.push_back(c);
        std::push_heap(frontier_.begin(), frontier_.end(), worse);
      }
    }
    return std::nullopt;
  }

  /// Every (id, key), in no particular order.
  template <class F>
  void for_each(const F& f) const {
    for (const auto& it : items_) f(FactId{it.id}, it.key);
  }

 private:
  struct Item {
    Key key;
    std::uint32_t id;
  };
  static bool before(const Item& a, const Item& b) {
    if (Before{}(a.key, b.key)) return true;
    if (Before{}(b.key, a.key)) return false;
    return a.id < b.id;
  }
  void up(std::uint32_t i) {
    const Item it = items_[i];
    while (i > 0) {
      const std::uint32_t p = (i - 1) / 2;
      if (!before(it, items_[p])) break;
      items_[i] = items_[p];
      (*pos_)[items_[i].id] = i;
      i = p;
    }
    items_[i] = it;
    (*pos_)[it.id] = i;
  }
  void down(std::uint32_t i) {
    const Item it = items_[i];
    const auto n = static_cast<std::uint32_t>(items_.size());
    while (true) {
      std::uint32_t c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && before(items_[c + 1], items_[c])) ++c;
      if (!before(items_[c], it)) break;
      items_[i] = items_[c];
      (*pos_)[items_[i].id] = i;
      i = c;
    }
    items_[i] = it;
    (*pos_)[it.id] = i;
  }

  std::vector<Item> items_;
  std::vector<std::uint32_t> own_pos_;
  std::vector<std::uint32_t>* pos_ = nullptr;
  mutable std::vector<std::uint32_t> frontier_;  // scratch of first_unpinned()
};

}  // namespace inferscale
