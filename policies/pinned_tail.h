#pragma once
// @brief PinnedTail: the search of a list-based victim() from the back, skipping the tail it
// found pinned at its previous call while no fact has been unpinned since.

#include <cstdint>

#include "policies/policy.h"

namespace inferscale {

/// @brief Remembers, between victim() calls, the last id of a list's tail that was all pinned.
/// A store that is nearly all pinned by running requests would otherwise make every search scan
/// the same pinned facts again; with the tail remembered a step's evictions cost what they move.
/// Answers are those of the plain scan: pins only grow while RunView::unpin_count() is
/// unchanged, and the owner calls unlink() before an id leaves the list or moves in it.
class PinnedTail {
 public:
  static constexpr std::uint32_t kNil = 0xffffffffu;

  /// The id nearest the back of `list` that is not pinned, or kNil. `ctx`: an EvictionContext,
  /// or a store tier's direct view of its pins with the same two queries (pinned, unpin_count).
  template <class List, class Ctx>
  std::uint32_t first_unpinned(const List& list, const Ctx& ctx) const {
    const std::uint64_t count = ctx.unpin_count();
    std::uint32_t i = list.back();
    if (count == kUncountedPins || count != unpins_) {
      last_ = kNil;
      unpins_ = count;
    } else if (last_ != kNil) {
      i = list.next_toward_front(last_);
    }
    for (; i != kNil; i = list.next_toward_front(i)) {
      if (!ctx.pinned(i)) return i;
      if (count != kUncountedPins) last_ = i;
    }
    return kNil;
  }

  /// Before `id` leaves `list` or moves within it: the remembered tail ends behind it.
  template <class List>
  void unlink(const List& list, std::uint32_t id) {
    if (id == last_) last_ = list.next_toward_back(id);
  }

 private:
  mutable std::uint32_t last_ = kNil;  // every id from the back up to this one is pinned
  mutable std::uint64_t unpins_ = kUncountedPins;
};

}  // namespace inferscale
