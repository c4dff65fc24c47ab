#pragma once
// @brief PinnedTail: the search of a list-based victim() from the back, skipping the tail it
// found pinned before, as long as none of that tail has been unpinned since.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "policies/policy.h"

namespace inferscale {

/// @brief Remembers, between victim() calls, the last id of a list's tail that was all pinned.
/// A store nearly full of facts pinned by running requests would otherwise make every search
/// scan the same pinned facts again. Answers are those of the plain scan from the back:
/// - while RunView::unpin_count() is unchanged, pins only grew, so the remembered tail is still
///   pinned;
/// - when it changed, the facts unpinned since (RunView::unpinned_since) that lie in the tail
///   become its holes, tried first, nearest the back first; a view without that log makes the
///   search start again from the back.
/// The owner calls stamp() whenever it puts an id at the front of the list (the list is then in
/// decreasing stamp order from front to back), and unlink() before an id leaves or moves.
class PinnedTail {
 public:
  static constexpr std::uint32_t kNil = 0xffffffffu;

  /// The id nearest the back of `list` that is not pinned, or kNil.
  template <class List>
  std::uint32_t first_unpinned(const List& list, const EvictionContext& ctx) const {
    const std::uint64_t count = ctx.unpin_count();
    if (count == kUncountedPins) {
      forget();
    } else if (count != unpins_) {
      if (last_ != kNil) add_holes(list, ctx);
      unpins_ = count;
    }
    if (last_ == kNil) {
      holes_.clear();
    } else {
      // Holes nearest the back first; a hole pinned again stays pinned until the count changes.
      const std::uint64_t limit = stamps_[last_];
      while (!holes_.empty()) {
        const FactId h = holes_.back();
        if (list.contains(h) && stamps_[h] <= limit && !ctx.pinned(h)) {
          return static_cast<std::uint32_t>(h);
        }
        holes_.pop_back();
      }
    }
    std::uint32_t i = last_ == kNil ? list.back() : list.next_toward_front(last_);
    for (; i != kNil; i = list.next_toward_front(i)) {
      if (!ctx.pinned(i)) return i;
      if (count != kUncountedPins) last_ = i;
    }
    return kNil;
  }

  /// `id` was pushed or moved to the front of the list.
  void stamp(FactId id) {
    if (id >= stamps_.size()) stamps_.resize(std::max<std::size_t>(id + 1, stamps_.size() * 2));
    stamps_[id] = ++clock_;
  }

  /// Before `id` leaves `list` or moves within it: the remembered tail ends behind it.
  template <class List>
  void unlink(const List& list, std::uint32_t id) {
    if (id == last_) last_ = list.next_toward_back(id);
  }

 private:
  void forget() const {
    last_ = kNil;
    holes_.clear();
  }

  /// The facts unpinned since the tail was found pinned become its holes.
  template <class List>
  void add_holes(const List& list, const EvictionContext& ctx) const {
    unpinned_.clear();
    if (ctx.run == nullptr || !ctx.run->unpinned_since(unpins_, &unpinned_)) {
      forget();
      return;
    }
    const std::uint64_t limit = stamps_[last_];
    for (const FactId u : unpinned_) {
      if (list.contains(u) && stamps_[u] <= limit && !ctx.pinned(u)) holes_.push_back(u);
    }
    std::sort(holes_.begin(), holes_.end(),
              [this](FactId a, FactId b) { return stamps_[a] > stamps_[b]; });
  }

  // Every id in the list from the back up to last_ is pinned, but for those in holes_.
  mutable std::uint32_t last_ = kNil;
  mutable std::vector<FactId> holes_;  // by decreasing stamp: the back of the list last
  mutable std::uint64_t unpins_ = kUncountedPins;
  mutable std::vector<FactId> unpinned_;  // scratch
  std::vector<std::uint64_t> stamps_;     // by id: when it was put at the front
  std::uint64_t clock_ = 0;
};

}  // namespace inferscale
