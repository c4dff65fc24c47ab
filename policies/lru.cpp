// LRU: evict the least recently used fact (the class is in lru.h, for store tiers' direct path).
#include "policies/lru.h"

#include "policies/registry.h"

namespace inferscale {

INFERSCALE_REGISTER_EVICTION(lru, "least recently used", {},
                             [](const PolicyArgs&) { return std::make_unique<Lru>(); });

}  // namespace inferscale
