#pragma once
// @brief LruOrder: the recency order of LRU as an append-only queue of ids with lazy deletion.
// A use appends the id; its older entries go stale (the id's position says which entry is
// live) and are dropped when the head passes them or when the queue is compacted. Finding the
// next victims reads the queue in order (sequential memory), not a chain of list nodes, whose
// dependent loads bound a store's evictions by memory latency.

#include <algorithm>
#include <cstdint>
#include <vector>

namespace inferscale {

/// @brief The order of a list (front: most recently used; back: least) with IdList's queries.
/// Amortised O(1): back() passes each stale entry once; the queue is compacted when it holds
/// more than twice the listed ids (plus a constant), at a cost of its length.
class LruOrder {
 public:
  static constexpr std::uint32_t kNil = 0xffffffffu;

  bool contains(std::uint32_t id) const { return id < pos_.size() && pos_[id] != kOut; }
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  /// The least recently used id, or kNil.
  std::uint32_t back() const {
    while (head_ < queue_.size() && !live(head_)) ++head_;
    return head_ < queue_.size() ? queue_[head_] : kNil;
  }
  /// The next id toward the front (more recently used) from a listed `id`, or kNil.
  std::uint32_t next_toward_front(std::uint32_t id) const {
    std::size_t j = pos_[id] + 1;
    while (j < queue_.size() && !live(j)) ++j;
    return j < queue_.size() ? queue_[j] : kNil;
  }
  /// The next id toward the back (less recently used) from a listed `id`, or kNil.
  std::uint32_t next_toward_back(std::uint32_t id) const {
    for (std::size_t j = pos_[id]; j > head_;) {
      if (live(--j)) return queue_[j];
    }
    return kNil;
  }

  /// Lists `id` (not listed) at the front.
  void push_front(std::uint32_t id) {
    if (id >= pos_.size()) pos_.resize(std::max<std::size_t>(id + 1, pos_.size() * 2), kOut);
    append(id);
    ++size_;
  }
  /// Moves a listed `id` to the front.
  void move_to_front(std::uint32_t id) {
    if (pos_[id] + 1 != queue_.size()) append(id);
  }
  /// Unlists a listed `id`.
  void erase(std::uint32_t id) {
    pos_[id] = kOut;
    --size_;
  }

  /// A walk from the back over the listed ids (a cursor into the queue), for a store that
  /// starts loading its next victims' records: walk_next answers the next listed id and moves
  /// the cursor past it, or kNil at the front. Reads only the queue and the ids' positions,
  /// whose addresses the queue gives ahead of time (no chain of dependent loads).
  std::size_t walk_start() const {
    back();  // past the stale entries at the head, once for every walk after it
    return head_;
  }
  std::uint32_t walk_next(std::size_t& cursor) const {
    while (cursor < queue_.size()) {
      const std::size_t j = cursor++;
      if (j + kAhead < queue_.size()) __builtin_prefetch(pos_.data() + queue_[j + kAhead]);
      if (live(j)) return queue_[j];
    }
    return kNil;
  }

 private:
  static constexpr std::uint32_t kOut = 0xffffffffu;  // the position of an id that is not listed
  static constexpr std::size_t kSlack = 1024;         // stale entries allowed beyond size()
  static constexpr std::size_t kAhead = 8;            // a walk's prefetch distance, in entries

  bool live(std::size_t j) const { return pos_[queue_[j]] == j; }
  void append(std::uint32_t id) {
    if (queue_.size() >= 2 * size_ + kSlack) compact();
    pos_[id] = static_cast<std::uint32_t>(queue_.size());
    queue_.push_back(id);
  }
  /// Keeps the live entries, in order, from index 0. A live entry moves to a lower index, which
  /// no later entry of the pass can equal, so a stale entry is never taken for a live one.
  [[gnu::noinline]] void compact() {
    std::size_t w = 0;
    for (std::size_t j = head_; j < queue_.size(); ++j) {
      if (j + kAhead < queue_.size()) __builtin_prefetch(pos_.data() + queue_[j + kAhead]);
      const std::uint32_t id = queue_[j];
      if (pos_[id] != j) continue;
      pos_[id] = static_cast<std::uint32_t>(w);
      queue_[w++] = id;
    }
    queue_.resize(w);
    head_ = 0;
  }

  std::vector<std::uint32_t> queue_;  // ids, least recently used first; stale entries included
  std::vector<std::uint32_t> pos_;    // by id: the index of its live entry, or kOut
  mutable std::size_t head_ = 0;      // entries before it are all stale
  std::size_t size_ = 0;
};

}  // namespace inferscale
