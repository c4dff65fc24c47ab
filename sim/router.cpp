#include "sim/router.h"

#include <algorithm>

#include "sim/replica.h"

namespace inferscale {

HashRing::HashRing(int replicas, int virtual_nodes) {
  for (int r = 0; r < replicas; ++r) {
    for (int v = 0; v < virtual_nodes; ++v) {
      ring_.emplace_back(mix64((std::uint64_t(r) << 32) | std::uint64_t(v)), r);
    }
  }
  std::sort(ring_.begin(), ring_.end());
}

int HashRing::owner(UserId user) const {
  const std::uint64_t h = mix64(user ^ 0x5bd1e9955bd1e995ull);
  auto it = std::lower_bound(ring_.begin(), ring_.end(), std::make_pair(h, -1));
  if (it == ring_.end()) it = ring_.begin();
  return it->second;
}

namespace {

class RoundRobin final : public Router {
 public:
  explicit RoundRobin(int replicas) : replicas_(replicas) {}
  int route(UserId, const std::vector<std::unique_ptr<Replica>>& replicas) override {
    const int r = next_;
    next_ = (next_ + 1) % static_cast<int>(replicas.size());
    return r;
  }
  int route_ahead(UserId, std::uint64_t nth) const override {
    return static_cast<int>(nth % static_cast<std::uint64_t>(replicas_));
  }

 private:
  int replicas_;
  int next_ = 0;
};

class LeastLoaded final : public Router {
 public:
  int route(UserId, const std::vector<std::unique_ptr<Replica>>& replicas) override {
    int best = 0;
    for (int r = 1; r < static_cast<int>(replicas.size()); ++r) {
      if (replicas[r]->load() < replicas[best]->load()) best = r;
    }
    return best;
  }
};

class UserAffinity final : public Router {
 public:
  explicit UserAffinity(int replicas) : ring_(replicas) {}
  int route(UserId user, const std::vector<std::unique_ptr<Replica>>&) override {
    return ring_.owner(user);
  }
  int route_ahead(UserId user, std::uint64_t) const override { return ring_.owner(user); }

 private:
  HashRing ring_;
};

}  // namespace

std::unique_ptr<Router> make_router(RouterKind kind, int replicas) {
  switch (kind) {
    case RouterKind::kRoundRobin:
      return std::make_unique<RoundRobin>(replicas);
    case RouterKind::kLeastLoaded:
      return std::make_unique<LeastLoaded>();
    case RouterKind::kUserAffinity:
      return std::make_unique<UserAffinity>(replicas);
  }
  return nullptr;
}

}  // namespace inferscale
