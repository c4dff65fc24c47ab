// unbounded: never evicts (the published design keeps every fact resident). The tier holds what
// fits in its capacity; what does not fit is not admitted.
#include "policies/registry.h"

namespace inferscale {
namespace {

class Unbounded final : public EvictionPolicy {
 public:
  void on_insert(const CacheEntry&, SimTime) override {}
  void on_hit(const CacheEntry&, SimTime) override {}
  void on_remove(FactId) override {}
  std::optional<FactId> victim(const EvictionContext&) const override { return std::nullopt; }
};

}  // namespace

INFERSCALE_REGISTER_EVICTION(unbounded, "never evict: everything that fits stays resident", {},
                             [](const PolicyArgs&) { return std::make_unique<Unbounded>(); });

}  // namespace inferscale
