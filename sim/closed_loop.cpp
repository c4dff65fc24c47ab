#include "sim/closed_loop.h"

#include <algorithm>

namespace inferscale {

void ClosedLoop::add(UserId user, ClosedRequest r) {
  auto [it, inserted] = index_.emplace(user, users_.size());
  if (inserted) users_.push_back(User{user, {}});
  users_[it->second].pending.push_back(std::move(r));
  ++requests_;
}

std::optional<ClosedLoop::Issue> ClosedLoop::activate_next(SimTime now) {
  if (next_inactive_ >= users_.size()) return std::nullopt;
  const std::size_t u = next_inactive_++;
  return Issue{std::max(now, users_[u].pending.front().time), u};
}

std::optional<ClosedLoop::Issue> ClosedLoop::on_complete(UserId user, SimTime now) {
  const std::size_t u = index_[user];
  const User& cu = users_[u];
  if (!cu.pending.empty()) return Issue{std::max(now + think_time_, cu.pending.front().time), u};
  return activate_next(now);
}

std::pair<UserId, ClosedRequest> ClosedLoop::take(std::size_t index) {
  User& cu = users_[index];
  ClosedRequest r = std::move(cu.pending.front());
  cu.pending.pop_front();
  return {cu.user, std::move(r)};
}

}  // namespace inferscale
