#include "sim/store_tier.h"

#include <algorithm>

#include "traces/error.h"

namespace inferscale {

StoreTier::StoreTier(std::string name, std::uint64_t capacity_bytes,
                     std::unique_ptr<EvictionPolicy> eviction,
                     std::unique_ptr<AdmissionPolicy> admission, std::string eviction_name,
                     bool fast_paths)
    : name_(std::move(name)),
      eviction_name_(std::move(eviction_name)),
      capacity_bytes_(capacity_bytes),
      eviction_(std::move(eviction)),
      admission_(std::move(admission)),
      track_last_access_(eviction_->needs_last_access()),
      slots_on_(eviction_->slot_ids()) {
  ask_admission_ = admission_ != nullptr && !admission_->admits_everything();
  slot_view_.tier = this;
  // The type, not the name: a plugin or a test's policy under any name takes the virtual path,
  // and so does the built-in LRU with the fast paths off.
  if (fast_paths && slots_on_ && !track_last_access_) lru_ = dynamic_cast<Lru*>(eviction_.get());
}

void FactBytes::resize(std::size_t n) {
  size_ = n;
  if (width_ == 1) codes1_.resize(n, 0);
  if (width_ == 2) codes2_.resize(n, 0);
  if (width_ == 8) raw_.resize(n, 0);
}

std::uint32_t FactBytes::code(std::uint64_t bytes) {
  // Facts come in a few sizes (whole KV blocks): a short scan beats hashing.
  const std::size_t scan = std::min<std::size_t>(values_.size(), 8);
  for (std::size_t c = 0; c < scan; ++c) {
    if (values_[c] == bytes) {
      last_bytes_ = bytes;
      last_code_ = static_cast<std::uint32_t>(c);
      return last_code_;
    }
  }
  auto it = code_of_.find(bytes);
  if (it == code_of_.end()) {
    const auto c = static_cast<std::uint32_t>(values_.size());
    if (c == (width_ == 1 ? 256u : 65536u)) {
      widen(width_ == 1 ? 2 : 8);
      if (width_ == 8) return 0;  // raw bytes from now on; the caller stores them
    }
    values_.push_back(bytes);
    it = code_of_.emplace(bytes, c).first;
  }
  last_bytes_ = bytes;
  last_code_ = it->second;
  return it->second;
}

void FactBytes::widen(int width) {
  if (width == 2) {
    codes2_.assign(codes1_.begin(), codes1_.end());
    std::vector<std::uint8_t>().swap(codes1_);
  } else {
    raw_.resize(size_);
    for (std::size_t i = 0; i < size_; ++i) {
      raw_[i] = values_[width_ == 1 ? codes1_[i] : codes2_[i]];
    }
    std::vector<std::uint8_t>().swap(codes1_);
    std::vector<std::uint16_t>().swap(codes2_);
    values_.clear();
    code_of_.clear();
  }
  width_ = width;
}

void StoreTier::grow_to(FactId id) {
  if (slots_on_) {
    if (id >= slot_of_.size()) {
      slot_of_.resize(std::max<std::size_t>(id + 1, slot_of_.size() * 2), kNoSlot);
      resident_bits_.resize((slot_of_.size() + 63) / 64, 0);
    }
    return;
  }
  if (id >= bytes_.size()) {
    bytes_.resize(std::max<std::size_t>(id + 1, bytes_.size() * 2));
    resident_bits_.resize((bytes_.size() + 63) / 64, 0);
    if (track_last_access_) last_access_.resize(bytes_.size(), kNever);
  }
}

bool StoreTier::lookup(const CacheEntry& e, SimTime now) {
  ++stats_.lookups;
  stats_.lookup_bytes += e.bytes;
  if (!slots_on_) eviction_->on_access(e, now);  // a slot-id policy does without (no slot yet)
  if (ask_admission_) admission_->on_access(e, now);
  if (!resident(e.id)) return false;
  ++stats_.hits;
  stats_.hit_bytes += e.bytes;
  if (slots_on_) {
    const std::uint32_t s = slot_of_[e.id];
    CacheEntry hit = e;
    hit.id = s;
    if (track_last_access_) {
      hit.last_access = slot_last_access_[s];
      slot_last_access_[s] = now;
    }
    eviction_->on_hit(hit, now);
    return true;
  }
  if (!track_last_access_) {
    eviction_->on_hit(e, now);
    return true;
  }
  CacheEntry hit = e;
  hit.last_access = last_access_[e.id];
  eviction_->on_hit(hit, now);
  last_access_[e.id] = now;
  return true;
}

void StoreTier::not_resident(FactId v) const {
  // Checked in every build: a plugin policy must not corrupt the store.
  throw PolicyContractError("eviction policy '" + eviction_name_ + "' on tier " + name_ +
                            " returned " + (slots_on_ ? "slot " : "fact ") + std::to_string(v) +
                            ", which is not resident");
}

std::optional<FactId> StoreTier::victim(const EvictionContext& ctx) const {
  if (!slots_on_) return eviction_->victim(ctx);
  SlotView view;
  view.tier = this;
  view.outer = ctx.run;
  EvictionContext slot_ctx = ctx;
  slot_ctx.run = ctx.run != nullptr ? &view : nullptr;  // as make_room gives it
  const auto v = eviction_->victim(slot_ctx);
  if (!v) return v;
  return victim_fact(*v);
}

bool StoreTier::make_room(const CacheEntry& e, SimTime now, std::vector<FactId>* evicted) {
  if (e.bytes > capacity_bytes_) return false;
  evicting_ = used_bytes_ + e.bytes > capacity_bytes_;
  if (!evicting_) return true;
  EvictionContext ctx;
  ctx.now = now;
  ctx.run = slots_on_ && view_ != nullptr ? &slot_view_ : view_;  // no view: none in slot ids
  ctx.incoming = &e;
  while (used_bytes_ + e.bytes > capacity_bytes_) {
    ctx.bytes_needed = used_bytes_ + e.bytes - capacity_bytes_;
    if (tracks_pins_ && unpinned_resident_ == 0) {
      INFERSCALE_ASSERT(!eviction_->victim(ctx) || ctx.pinned(*eviction_->victim(ctx)),
                        "unpinned resident facts miscounted");
      return false;
    }
    const auto v = eviction_->victim(ctx);
    if (!v) return false;
    const FactId fact = victim_fact(*v);
    // A slot's pin flag is read in place (the view's answer, without a virtual call).
    const bool pinned =
        slots_on_ && tracks_pins_ ? slots_[*v].pinned != 0 : view_ != nullptr && ctx.pinned(*v);
    if (pinned) {
      throw PolicyContractError("eviction policy '" + eviction_name_ + "' on tier " + name_ +
                                " returned fact " + std::to_string(fact) +
                                ", which is pinned by a running request");
    }
    drop(fact, static_cast<std::uint32_t>(*v));
    eviction_->on_evict(*v, ctx);
    ++stats_.evictions;
    if (evicted) evicted->push_back(fact);
  }
  return true;
}

bool StoreTier::insert(const CacheEntry& e, SimTime now, std::vector<FactId>* evicted) {
  INFERSCALE_ASSERT(!resident(e.id), "insert of a resident fact");
  if (ask_admission_ && !admission_->admit(e, now)) {
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
  const bool pinned = tracks_pins_ && view_->pinned(e.id);
  resident_bits_[e.id >> 6] |= std::uint64_t{1} << (e.id & 63);
  used_bytes_ += e.bytes;
  ++resident_count_;
  if (tracks_pins_ && !pinned) ++unpinned_resident_;
  ++stats_.inserts;
  stats_.peak_bytes = std::max(stats_.peak_bytes, used_bytes_);
  INFERSCALE_ASSERT(used_bytes_ <= capacity_bytes_, "tier capacity exceeded");
  if (slots_on_) {
    const std::uint32_t s = take_slot();
    slot_of_[e.id] = s;
    Slot& slot = slots_[s];
    slot.fact = e.id;
    slot.bytes = e.bytes;
    slot.used = 1;
    slot.pinned = pinned ? 1 : 0;
    if (track_last_access_) slot_last_access_[s] = now;
    CacheEntry in = e;
    in.id = s;
    eviction_->on_insert(in, now);
    return true;
  }
  bytes_.set(e.id, e.bytes);
  if (track_last_access_) last_access_[e.id] = now;
  eviction_->on_insert(e, now);
  return true;
}

std::uint32_t StoreTier::new_slot() {
  const auto s = static_cast<std::uint32_t>(slots_.size());
  slots_.emplace_back();
  if (track_last_access_) slot_last_access_.push_back(kNever);
  return s;
}

void StoreTier::finish_victim_walk(VictimWalk& w) const {
  while (w.active && w.n < w.steps) step_victim_walk(w);
  for (std::uint32_t i = 0; i < w.n; ++i) {
    const FactId fact = slots_[w.ids[i]].fact;
    if ((fact >> 6) < resident_bits_.size()) {
      __builtin_prefetch(resident_bits_.data() + (fact >> 6), 1);
    }
  }
}

void StoreTier::drop(FactId id, std::uint32_t slot) {
  resident_bits_[id >> 6] &= ~(std::uint64_t{1} << (id & 63));
  --resident_count_;
  if (slots_on_) {
    // The slot's pin flag when told of pins: the victim's records of the owner stay untouched.
    if (tracks_pins_ && slots_[slot].pinned == 0) --unpinned_resident_;
    used_bytes_ -= slots_[slot].bytes;
    slots_[slot].used = 0;
    free_slots_.push_back(slot);
    return;
  }
  if (tracks_pins_ && !view_->pinned(id)) --unpinned_resident_;
  used_bytes_ -= bytes_.get(id);
}

void StoreTier::remove(FactId id) {
  INFERSCALE_ASSERT(resident(id), "remove of a non-resident fact");
  const FactId policy_id = slots_on_ ? slot_of_[id] : id;
  drop(id, static_cast<std::uint32_t>(policy_id));
  eviction_->on_remove(policy_id);
}

}  // namespace inferscale
