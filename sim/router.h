#pragma once
// @brief Routers: which replica serves a request. Memory writes always go to the user's home
// replica (the consistent-hash owner), whatever the router.

#include <cstdint>
#include <memory>
#include <vector>

#include "sim/config/experiment.h"

namespace inferscale {

class Replica;

class Router {
 public:
  virtual ~Router() = default;
  virtual int route(UserId user, const std::vector<std::unique_ptr<Replica>>& replicas) = 0;
  /// The replica route() picks for the `nth` request of an open-loop trace (from 0; the requests
  /// are routed in trace order), known before it is routed; -1 where that depends on the
  /// replicas' state at the time.
  virtual int route_ahead(UserId user, std::uint64_t nth) const {
    (void)user;
    (void)nth;
    return -1;
  }
};

/// Consistent hashing of users onto replicas (virtual nodes on a 64-bit ring).
class HashRing {
 public:
  explicit HashRing(int replicas, int virtual_nodes = 64);
  int owner(UserId user) const;

 private:
  std::vector<std::pair<std::uint64_t, int>> ring_;
};

/// `per_node`: replicas of a node; a user stays on the node of its consistent-hash home
/// replica (replicas fill nodes in order), where its host and disk tiers are.
std::unique_ptr<Router> make_router(RouterKind kind, int replicas, int per_node);

/// 64-bit mix (splitmix64 finaliser): deterministic hashing everywhere in sim/.
inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace inferscale
