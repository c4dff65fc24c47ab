#pragma once
// @brief IdList and IdListSet: intrusive doubly linked lists over dense fact ids, O(1)
// everything, no allocation per operation. The building blocks of the queue-based policies.

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "traces/types.h"

namespace inferscale {

/// @brief One list. Front: most recently pushed; back: oldest. With `kMark`, every node also
/// carries an 8-bit mark (a reference bit, a small count) in the same cache line as its links.
template <bool kMark>
class BasicIdList {
 public:
  static constexpr std::uint32_t kNil = 0xffffffffu;

  bool contains(FactId id) const { return id < nodes_.size() && nodes_[id].prev != kOut; }
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  std::uint32_t front() const { return head_; }
  std::uint32_t back() const { return tail_; }
  std::uint32_t next_toward_front(std::uint32_t id) const { return nodes_[id].prev; }
  std::uint32_t next_toward_back(std::uint32_t id) const { return nodes_[id].next; }
  std::uint8_t mark(std::uint32_t id) const requires kMark { return nodes_[id].mark; }
  void set_mark(std::uint32_t id, std::uint8_t m) requires kMark { nodes_[id].mark = m; }

  /// Pushes `id` at the front; with marks, its mark is 0.
  void push_front(FactId id) {
    grow(id);
    const auto i = static_cast<std::uint32_t>(id);
    nodes_[i] = Node{kNil, head_};
    if (head_ != kNil) nodes_[head_].prev = i;
    head_ = i;
    if (tail_ == kNil) tail_ = i;
    ++size_;
  }

  void erase(FactId id) {
    const auto i = static_cast<std::uint32_t>(id);
    const Node n = nodes_[i];
    if (n.prev != kNil)
      nodes_[n.prev].next = n.next;
    else
      head_ = n.next;
    if (n.next != kNil)
      nodes_[n.next].prev = n.prev;
    else
      tail_ = n.prev;
    nodes_[i].prev = kOut;
    --size_;
  }

  /// Moves a listed id to the front, keeping its mark.
  void move_to_front(FactId id) {
    const auto i = static_cast<std::uint32_t>(id);
    if (head_ == i) return;
    Node& n = nodes_[i];
    nodes_[n.prev].next = n.next;  // not the head: prev exists
    if (n.next != kNil)
      nodes_[n.next].prev = n.prev;
    else
      tail_ = n.prev;
    n.prev = kNil;
    n.next = head_;
    nodes_[head_].prev = i;
    head_ = i;
  }

 private:
  static constexpr std::uint32_t kOut = 0xfffffffeu;  // prev of an id that is in no list
  struct PlainNode {
    std::uint32_t prev = kOut, next = kNil;
  };
  struct alignas(16) MarkedNode {  // 16 bytes: a node never straddles two cache lines
    std::uint32_t prev = kOut, next = kNil;
    std::uint8_t mark = 0;
  };
  using Node = std::conditional_t<kMark, MarkedNode, PlainNode>;
  void grow(FactId id) {
    if (id >= nodes_.size()) nodes_.resize(std::max<std::size_t>(id + 1, nodes_.size() * 2));
  }

  std::vector<Node> nodes_;
  std::uint32_t head_ = kNil, tail_ = kNil;
  std::size_t size_ = 0;
};

using IdList = BasicIdList<false>;
using MarkedIdList = BasicIdList<true>;

/// @brief Several lists over one id space; an id is in at most one of them. Lists are numbered
/// 0..lists()-1 and can be added (per-user lists, frequency buckets).
class IdListSet {
 public:
  static constexpr std::uint32_t kNil = 0xffffffffu;
  static constexpr std::uint32_t kNoList = 0xffffffffu;

  explicit IdListSet(std::size_t lists = 0) : lists_(lists) {}

  std::size_t lists() const { return lists_.size(); }
  void resize_lists(std::size_t n) { lists_.resize(n); }
  /// The list holding `id`, or kNoList.
  std::uint32_t list_of(FactId id) const { return id < nodes_.size() ? nodes_[id].list : kNoList; }
  bool contains(FactId id) const { return list_of(id) != kNoList; }
  bool empty(std::uint32_t list) const { return lists_[list].size == 0; }
  std::size_t size(std::uint32_t list) const { return lists_[list].size; }
  std::uint32_t front(std::uint32_t list) const { return lists_[list].head; }
  std::uint32_t back(std::uint32_t list) const { return lists_[list].tail; }
  std::uint32_t next_toward_front(std::uint32_t id) const { return nodes_[id].prev; }
  std::uint32_t next_toward_back(std::uint32_t id) const { return nodes_[id].next; }
  /// An 8-bit mark per id (a count, a bit), in the same cache line as its links. Kept across
  /// moves between lists; push_front/push_back do not change it.
  std::uint8_t mark(std::uint32_t id) const { return nodes_[id].mark; }
  void set_mark(std::uint32_t id, std::uint8_t m) { nodes_[id].mark = m; }

  void push_front(std::uint32_t list, FactId id) {
    grow(id);
    const auto i = static_cast<std::uint32_t>(id);
    Head& l = lists_[list];
    Node& n = nodes_[i];
    n.prev = kNil;
    n.next = l.head;
    n.list = list;
    if (l.head != kNil) nodes_[l.head].prev = i;
    l.head = i;
    if (l.tail == kNil) l.tail = i;
    ++l.size;
  }

  void push_back(std::uint32_t list, FactId id) {
    grow(id);
    const auto i = static_cast<std::uint32_t>(id);
    Head& l = lists_[list];
    Node& n = nodes_[i];
    n.prev = l.tail;
    n.next = kNil;
    n.list = list;
    if (l.tail != kNil) nodes_[l.tail].next = i;
    l.tail = i;
    if (l.head == kNil) l.head = i;
    ++l.size;
  }

  void erase(FactId id) {
    const auto i = static_cast<std::uint32_t>(id);
    const Node n = nodes_[i];
    Head& l = lists_[n.list];
    if (n.prev != kNil)
      nodes_[n.prev].next = n.next;
    else
      l.head = n.next;
    if (n.next != kNil)
      nodes_[n.next].prev = n.prev;
    else
      l.tail = n.prev;
    nodes_[i].list = kNoList;
    --l.size;
  }

  /// Moves `id` (in any list or none) to the front of `list`.
  void move_to_front(std::uint32_t list, FactId id) {
    if (contains(id)) {
      if (nodes_[id].list == list && lists_[list].head == id) return;
      erase(id);
    }
    push_front(list, id);
  }

 private:
  struct Node {  // 16 bytes: never straddles two cache lines
    std::uint32_t prev = kNil, next = kNil, list = kNoList;
    std::uint8_t mark = 0;
  };
  struct Head {
    std::uint32_t head = kNil, tail = kNil;
    std::size_t size = 0;
  };
  void grow(FactId id) {
    if (id >= nodes_.size()) {
      nodes_.resize(std::max<std::size_t>(id + 1, nodes_.size() * 2));
    }
  }

  std::vector<Node> nodes_;
  std::vector<Head> lists_;
};

/// Grows `v` so that v[id] exists (doubling, so growth is amortised O(1)).
template <class T>
void grow_to(std::vector<T>& v, FactId id, const T& fill = T{}) {
  if (id >= v.size()) v.resize(std::max<std::size_t>(id + 1, v.size() * 2), fill);
}

}  // namespace inferscale
