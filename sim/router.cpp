#include "sim/router.h"

#include <algorithm>
#include <optional>

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

/// The replicas a user may be routed to: its home node's, [first, first + count).
struct NodeSpan {
  int first, count;
};

class NodeRouting {
 public:
  NodeRouting(int replicas, int per_node) : replicas_(replicas), per_node_(per_node) {
    if (per_node_ < replicas_) ring_.emplace(replicas_);
  }
  NodeSpan span(UserId user) const {
    if (!ring_) return {0, replicas_};
    const int first = ring_->owner(user) / per_node_ * per_node_;
    return {first, std::min(per_node_, replicas_ - first)};
  }
  bool single() const { return !ring_; }

 private:
  int replicas_, per_node_;
  std::optional<HashRing> ring_;
};

class RoundRobin final : public Router {
 public:
  RoundRobin(int replicas, int per_node)
      : replicas_(replicas),
        per_node_(per_node),
        nodes_(replicas, per_node),
        next_((replicas + per_node - 1) / per_node, 0) {}
  int route(UserId user, const std::vector<std::unique_ptr<Replica>>&) override {
    const NodeSpan s = nodes_.span(user);
    int& next = next_[s.first / per_node_];
    const int r = s.first + next;
    next = (next + 1) % s.count;
    return r;
  }
  int route_ahead(UserId, std::uint64_t nth) const override {
    if (!nodes_.single()) return -1;  // depends on the other nodes' users before it
    return static_cast<int>(nth % static_cast<std::uint64_t>(replicas_));
  }

 private:
  int replicas_, per_node_;
  NodeRouting nodes_;
  std::vector<int> next_;  // by node
};

class LeastLoaded final : public Router {
 public:
  LeastLoaded(int replicas, int per_node) : nodes_(replicas, per_node) {}
  int route(UserId user, const std::vector<std::unique_ptr<Replica>>& replicas) override {
    const NodeSpan s = nodes_.span(user);
    int best = s.first;
    for (int r = s.first + 1; r < s.first + s.count; ++r) {
      if (replicas[r]->load() < replicas[best]->load()) best = r;
    }
    return best;
  }

 private:
  NodeRouting nodes_;
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

std::unique_ptr<Router> make_router(RouterKind kind, int replicas, int per_node) {
  switch (kind) {
    case RouterKind::kRoundRobin:
      return std::make_unique<RoundRobin>(replicas, per_node);
    case RouterKind::kLeastLoaded:
      return std::make_unique<LeastLoaded>(replicas, per_node);
    case RouterKind::kUserAffinity:
      return std::make_unique<UserAffinity>(replicas);
  }
  return nullptr;
}

}  // namespace inferscale
