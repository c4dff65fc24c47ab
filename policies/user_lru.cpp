// user_lru: user-aware LRU. Evicts from the user idle longest (least recent lookup of any of the
// user's facts on this tier), that user's least recently used fact first; never a fact of a user
// with a request in flight (RunView::user_in_flight). The user order is kept from the lookups
// the tier sees: every request looks up its facts, so it is the order of the users' last
// requests without a scan over all users. When every user with resident facts is in flight,
// nothing is evicted (the incoming fact is not inserted).
#include <unordered_map>

#include "policies/id_list.h"
#include "policies/registry.h"

namespace inferscale {
namespace {

class UserLru final : public EvictionPolicy {
 public:
  void on_access(const CacheEntry& e, SimTime) override {
    const std::uint32_t u = slot(e.user);
    users_.contains(u) ? users_.move_to_front(u) : users_.push_front(u);
  }

  void on_insert(const CacheEntry& e, SimTime) override {
    const std::uint32_t u = slot(e.user);
    if (!users_.contains(u)) users_.push_front(u);
    facts_.push_front(u, e.id);
  }

  void on_hit(const CacheEntry& e, SimTime) override {
    facts_.move_to_front(facts_.list_of(e.id), e.id);
  }

  void on_remove(FactId id) override {
    const std::uint32_t u = facts_.list_of(id);
    facts_.erase(id);
    if (facts_.empty(u)) users_.erase(u);  // re-enters at its next lookup or insert
  }

  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    for (auto u = users_.back(); u != IdList::kNil; u = users_.next_toward_front(u)) {
      if (facts_.empty(u)) continue;  // looked up, nothing resident yet
      if (ctx.run != nullptr && ctx.run->user_in_flight(user_of_[u])) continue;
      for (auto i = facts_.back(u); i != IdListSet::kNil; i = facts_.next_toward_front(i)) {
        if (!ctx.pinned(i)) return i;
      }
    }
    return std::nullopt;
  }

 private:
  std::uint32_t slot(UserId user) {
    auto [it, added] = slot_of_.try_emplace(user, static_cast<std::uint32_t>(user_of_.size()));
    if (added) {
      user_of_.push_back(user);
      facts_.resize_lists(user_of_.size());
    }
    return it->second;
  }

  std::unordered_map<UserId, std::uint32_t> slot_of_;  // user -> dense slot
  std::vector<UserId> user_of_;
  IdList users_;     // user slots, front: most recently active
  IdListSet facts_;  // one LRU list per user slot
};

}  // namespace

INFERSCALE_REGISTER_EVICTION(
    user_lru, "user-aware LRU: facts of the user idle longest first, never of a user in flight", {},
    [](const PolicyArgs&) { return std::make_unique<UserLru>(); });

}  // namespace inferscale
