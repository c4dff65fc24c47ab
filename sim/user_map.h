#pragma once
// @brief UserMap: per-user state by user id; traces number users densely from 0, so small ids
// index a vector (a request's lookup is one array access, not a hash), larger ones a hash map.

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "traces/types.h"

namespace inferscale {

template <class T>
class UserMap {
 public:
  /// Every user in the hash map, none in the table by id: for a replica of a large fleet, which
  /// serves a small part of the users (call before the first use).
  void set_sparse_only() { dense_limit_ = 0; }
  /// The state of `user`, default-constructed at first use.
  T& operator[](UserId user) {
    if (user >= dense_limit_) {
      auto [it, inserted] = sparse_.try_emplace(user);
      return it->second;
    }
    if (user >= dense_.size()) {
      const std::size_t n = std::max<std::size_t>(user + 1, dense_.size() * 2);
      dense_.resize(n);
      used_.resize(n, 0);
    }
    if (used_[user] == 0) {
      used_[user] = 1;
      ++dense_count_;
    }
    return dense_[user];
  }
  /// The state of `user`, or null if it was never used.
  const T* find(UserId user) const {
    if (user >= dense_limit_) {
      auto it = sparse_.find(user);
      return it == sparse_.end() ? nullptr : &it->second;
    }
    return user < dense_.size() && used_[user] != 0 ? &dense_[user] : nullptr;
  }
  T* find(UserId user) { return const_cast<T*>(static_cast<const UserMap&>(*this).find(user)); }
  /// Users used so far.
  std::size_t size() const { return dense_count_ + sparse_.size(); }

 private:
  static constexpr UserId kDenseUsers = UserId{1} << 22;
  UserId dense_limit_ = kDenseUsers;
  std::vector<T> dense_;
  std::vector<std::uint8_t> used_;
  std::size_t dense_count_ = 0;
  std::unordered_map<UserId, T> sparse_;
};

}  // namespace inferscale
