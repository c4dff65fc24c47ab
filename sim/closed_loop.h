#pragma once
// @brief ClosedLoop: a closed-loop trace's requests, queued by user. A user's next question is
// issued once its previous answer is back and its think time has passed (and not before the
// time the trace gives it); a fixed number of users are active at once, each, when its last
// request completes, handing its place to the next user in order of first appearance.

#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "traces/types.h"

namespace inferscale {

/// A closed-loop request waiting for its user's previous answer.
struct ClosedRequest {
  RequestId id;
  SimTime time;
  std::uint32_t query_tokens, output_tokens;
  std::int64_t trace_position;
  std::vector<std::uint32_t> facts;  // dense ids
};

class ClosedLoop {
 public:
  void set_think_time(SimTime t) { think_time_ = t; }
  /// A request of the trace, queued behind its user's earlier ones.
  void add(UserId user, ClosedRequest r);
  /// Requests added.
  std::uint64_t requests() const { return requests_; }

  /// When to issue a user's next request, and which user (its index, for take()).
  struct Issue {
    SimTime time;
    std::size_t user;
  };
  /// The next user not active yet becomes active at `now`: its first request's issue; nothing
  /// when every user has been.
  std::optional<Issue> activate_next(SimTime now);
  /// A request of `user` completed at `now`: the issue of its next request, or else the next
  /// user's activation.
  std::optional<Issue> on_complete(UserId user, SimTime now);
  /// The user at `index` and its next request, taken off its queue (at its issue).
  std::pair<UserId, ClosedRequest> take(std::size_t index);

 private:
  struct User {
    UserId user;
    std::deque<ClosedRequest> pending;
  };
  SimTime think_time_ = 0;
  std::vector<User> users_;  // in order of first appearance
  std::unordered_map<UserId, std::size_t> index_;
  std::size_t next_inactive_ = 0;
  std::uint64_t requests_ = 0;
};

}  // namespace inferscale
