#include "sim/store_tier.h"

#include <algorithm>

#include "traces/error.h"

namespace inferscale {

StoreTier::StoreTier(std::string name, std::uint64_t capacity_bytes,
                     std::unique_ptr<EvictionPolicy> eviction,
                     std::unique_ptr<AdmissionPolicy> admission, std::string eviction_name)
    : name_(std::move(name)),
      eviction_name_(std::move(eviction_name)),
      capacity_bytes_(capacity_bytes),
      eviction_(std::move(eviction)),
      admission_(std::move(admission)) {}

void StoreTier::grow(FactId id) {
  if (id >= slots_.size()) slots_.resize(std::max<std::size_t>(id + 1, slots_.size() * 2));
}

bool StoreTier::lookup(const CacheEntry& e, SimTime now) {
  ++stats_.lookups;
  stats_.lookup_bytes += e.bytes;
  eviction_->on_access(e, now);
  if (admission_) admission_->on_access(e, now);
  if (!resident(e.id)) return false;
  ++stats_.hits;
  stats_.hit_bytes += e.bytes;
  Slot& slot = slots_[e.id];
  CacheEntry hit = e;
  hit.last_access = slot.last_access;
  eviction_->on_hit(hit, now);
  slot.last_access = now;
  return true;
}

bool StoreTier::make_room(const CacheEntry& e, SimTime now, std::vector<FactId>* evicted) {
  if (e.bytes > capacity_bytes_) return false;
  if (used_bytes_ + e.bytes <= capacity_bytes_) return true;
  EvictionContext ctx;
  ctx.now = now;
  ctx.run = view_;
  ctx.incoming = &e;
  while (used_bytes_ + e.bytes > capacity_bytes_) {
    ctx.bytes_needed = used_bytes_ + e.bytes - capacity_bytes_;
    const auto v = eviction_->victim(ctx);
    if (!v) return false;
    // Checked in every build: a plugin policy must not corrupt the store.
    if (!resident(*v)) {
      throw PolicyContractError("eviction policy '" + eviction_name_ + "' on tier " + name_ +
                                " returned fact " + std::to_string(*v) + ", which is not resident");
    }
    if (view_ != nullptr && view_->pinned(*v)) {
      throw PolicyContractError("eviction policy '" + eviction_name_ + "' on tier " + name_ +
                                " returned fact " + std::to_string(*v) +
                                ", which is pinned by a running request");
    }
    drop(*v);
    eviction_->on_evict(*v, ctx);
    ++stats_.evictions;
    if (evicted) evicted->push_back(*v);
  }
  return true;
}

bool StoreTier::insert(const CacheEntry& e, SimTime now, std::vector<FactId>* evicted) {
  INFERSCALE_ASSERT(!resident(e.id), "insert of a resident fact");
  if (admission_ && !admission_->admit(e, now)) {
    ++stats_.rejected;
    return false;
  }
  return force_insert(e, now, evicted);
}

bool StoreTier::force_insert(const CacheEntry& e, SimTime now, std::vector<FactId>* evicted) {
  if (!make_room(e, now, evicted)) {
    ++stats_.rejected;
    return false;
  }
  grow(e.id);
  slots_[e.id] = Slot{e.bytes, now, true};
  used_bytes_ += e.bytes;
  ++resident_count_;
  ++stats_.inserts;
  stats_.peak_bytes = std::max(stats_.peak_bytes, used_bytes_);
  INFERSCALE_ASSERT(used_bytes_ <= capacity_bytes_, "tier capacity exceeded");
  eviction_->on_insert(e, now);
  return true;
}

void StoreTier::drop(FactId id) {
  Slot& slot = slots_[id];
  slot.resident = false;
  used_bytes_ -= slot.bytes;
  --resident_count_;
}

void StoreTier::remove(FactId id) {
  INFERSCALE_ASSERT(resident(id), "remove of a non-resident fact");
  drop(id);
  eviction_->on_remove(id);
}

}  // namespace inferscale
