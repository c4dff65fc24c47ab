#pragma once
// @brief Test-only: the built-in LRU (policies/lru.h) behind the virtual interface alone, so a
// store tier cannot take its direct path, and with slot ids on or off. Registered by the tests
// that compare it with the built-in LRU.

#include <optional>

#include "policies/lru.h"

namespace inferscale::test {

class ForwardingLru final : public EvictionPolicy {
 public:
  explicit ForwardingLru(bool slot_ids) : slot_ids_(slot_ids) {}
  void on_insert(const CacheEntry& e, SimTime now) override { lru_.on_insert(e, now); }
  void on_hit(const CacheEntry& e, SimTime now) override { lru_.on_hit(e, now); }
  void on_remove(FactId id) override { lru_.on_remove(id); }
  void on_evict(FactId id, const EvictionContext& ctx) override { lru_.on_evict(id, ctx); }
  bool slot_ids() const override { return slot_ids_; }
  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    return lru_.victim(ctx);
  }

 private:
  Lru lru_;
  bool slot_ids_;
};

}  // namespace inferscale::test
