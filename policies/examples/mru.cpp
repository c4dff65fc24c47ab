// mru: evict the most recently used fact. Good where facts come back in loops longer than the
// store (LRU then misses every time), bad almost everywhere else.
//
// The template for a new in-tree policy: copy this file to policies/my_policy.cpp, rename the
// class and the registration line, add the file to policies/CMakeLists.txt. A policy writes the
// four methods of EvictionPolicy (policies/policy.h) and nothing else; `inferscale policies`
// lists it, YAML selects it by name, and the property tests (tests/policies/property_test.cpp,
// `inferscale policy check`) cover it with no further work.
#include <optional>
#include <vector>

#include "policies/registry.h"

namespace inferscale {
namespace {

/// @brief The resident facts in a doubly linked list, most recently used at the front, whose
/// links are kept in vectors indexed by fact id (ids are dense in a run).
class Mru final : public EvictionPolicy {
 public:
  void on_insert(const CacheEntry& e, SimTime /*now*/) override { push_front(e.id); }
  void on_hit(const CacheEntry& e, SimTime /*now*/) override {
    unlink(e.id);
    push_front(e.id);
  }
  void on_remove(FactId id) override { unlink(id); }

  /// The most recently used fact that no running request pins. Reads, changes nothing.
  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    for (FactId id = front_; id != kNone; id = next_[id]) {
      if (!ctx.pinned(id)) return id;
    }
    return std::nullopt;
  }

 private:
  static constexpr FactId kNone = ~FactId{0};

  void push_front(FactId id) {
    if (id >= next_.size()) {
      next_.resize(id + 1, kNone);
      prev_.resize(id + 1, kNone);
    }
    prev_[id] = kNone;
    next_[id] = front_;
    if (front_ != kNone) prev_[front_] = id;
    front_ = id;
  }
  void unlink(FactId id) {
    if (prev_[id] != kNone) {
      next_[prev_[id]] = next_[id];
    } else {
      front_ = next_[id];
    }
    if (next_[id] != kNone) prev_[next_[id]] = prev_[id];
  }

  std::vector<FactId> next_;  // by fact id: the next fact toward the back (less recently used)
  std::vector<FactId> prev_;  // by fact id: the next fact toward the front
  FactId front_ = kNone;      // the most recently used fact
};

}  // namespace

INFERSCALE_REGISTER_EVICTION(mru, "most recently used (the example: policies/examples/mru.cpp)", {},
                             [](const PolicyArgs&) { return std::make_unique<Mru>(); });

}  // namespace inferscale
