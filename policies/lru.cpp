// lru: evict the least recently used fact. The order is LruOrder (lru_order.h): a use appends
// the fact's id to a queue and the victim is the oldest live entry, skipping pinned facts; a
// tail found pinned is remembered until a fact is unpinned (PinnedTail, pinned_tail.h). The
// class is declared in lru.h, whose inline core a store tier may call directly.
#include "policies/lru.h"

#include "policies/registry.h"

namespace inferscale {

void Lru::on_insert(const CacheEntry& e, SimTime /*now*/) {
  insert(static_cast<std::uint32_t>(e.id));
}

void Lru::on_hit(const CacheEntry& e, SimTime /*now*/) {
  hit(static_cast<std::uint32_t>(e.id));
}

void Lru::on_remove(FactId id) {
  remove(static_cast<std::uint32_t>(id));
}

std::optional<FactId> Lru::victim(const EvictionContext& ctx) const {
  const auto i = pick(ctx);
  if (i == LruOrder::kNil) return std::nullopt;
  return i;
}

// Evicting also starts loading the next victim's pin record (a speed hook, policy_hooks.h).
void Lru::on_evict(FactId id, const EvictionContext& ctx) {
  evict(static_cast<std::uint32_t>(id), ctx);
}

// Order alone decides: with slot ids a million-fact run keeps its list in the cache.
bool Lru::slot_ids() const {
  return true;
}

INFERSCALE_REGISTER_EVICTION(lru, "least recently used", {},
                             [](const PolicyArgs&) { return std::make_unique<Lru>(); });

}  // namespace inferscale
