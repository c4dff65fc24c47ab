#pragma once
// @brief StoreTier: one tier (GPU or host) of a replica's fact-KV store: a byte capacity, an
// admission and an eviction policy, and the residency they decide. Ids are the replica's dense
// fact ids.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "policies/lru.h"
#include "policies/policy.h"
#include "traces/error.h"

namespace inferscale {

/// A policy broke its contract (returned a pinned or non-resident victim). Not user input: the
/// run stops with this message instead of corrupting the store.
class PolicyContractError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// @brief Bytes per fact id, dictionary-coded: a fact stores the index of its size among the
/// distinct sizes seen, in 1 byte while there are at most 256 of them, then in 2 bytes up to
/// 65536, then the bytes themselves. Facts' sizes are few (tokens x bytes per token), so with 1M
/// facts the codes take 1 MiB and an eviction's read usually stays in the core's cache.
class FactBytes {
 public:
  std::uint64_t get(FactId id) const {
    if (width_ == 1) return values_[codes1_[id]];
    if (width_ == 2) return values_[codes2_[id]];
    return raw_[id];
  }
  void set(FactId id, std::uint64_t bytes) {
    if (width_ == 8) {
      raw_[id] = bytes;
      return;
    }
    const std::uint32_t c = bytes == last_bytes_ ? last_code_ : code(bytes);
    if (width_ == 1) {
      codes1_[id] = static_cast<std::uint8_t>(c);
    } else if (width_ == 2) {
      codes2_[id] = static_cast<std::uint16_t>(c);
    } else {
      raw_[id] = bytes;  // code() widened to raw bytes
    }
  }
  std::size_t size() const { return size_; }
  void resize(std::size_t n);

 private:
  std::uint32_t code(std::uint64_t bytes);  // adds new sizes; widens the codes when needed
  void widen(int width);

  int width_ = 1;
  std::size_t size_ = 0;
  std::vector<std::uint8_t> codes1_;
  std::vector<std::uint16_t> codes2_;
  std::vector<std::uint64_t> raw_;
  std::vector<std::uint64_t> values_;  // by code
  std::unordered_map<std::uint64_t, std::uint32_t> code_of_;
  std::uint64_t last_bytes_ = ~std::uint64_t{0};
  std::uint32_t last_code_ = 0;
};

struct TierStats {
  std::uint64_t lookups = 0, hits = 0;
  std::uint64_t lookup_bytes = 0, hit_bytes = 0;
  std::uint64_t inserts = 0, rejected = 0, evictions = 0;
  std::uint64_t peak_bytes = 0;
};

class StoreTier {
 public:
  static constexpr std::uint32_t kNoSlot = 0xffffffffu;  // hit_slot's answer for a miss
  StoreTier(std::string name, std::uint64_t capacity_bytes,
            std::unique_ptr<EvictionPolicy> eviction, std::unique_ptr<AdmissionPolicy> admission,
            std::string eviction_name = {}, bool fast_paths = true);
  StoreTier(StoreTier&&) = delete;  // its slot view points to it

  /// The run's view (pins, users, future); set before the first access. Also given to the
  /// eviction policy (EvictionPolicy::attach). With `tracks_pins`, the run calls on_pinned and
  /// on_unpinned whenever RunView::pinned changes for a fact.
  void set_view(const RunView* view, bool tracks_pins = false) {
    view_ = view;
    tracks_pins_ = tracks_pins && view != nullptr;
    slot_view_.outer = view;
    slot_view_.use_flags = tracks_pins_;
    eviction_->attach(slots_on_ && view != nullptr ? &slot_view_ : view);
  }
  /// `id` became pinned (set_view with tracks_pins).
  void on_pinned(FactId id) {
    if (!resident(id)) return;
    --unpinned_resident_;
    if (slots_on_) slots_[slot_of_[id]].pinned = 1;
  }
  /// `id` is no longer pinned (set_view with tracks_pins).
  void on_unpinned(FactId id) {
    if (!resident(id)) return;
    ++unpinned_resident_;
    if (slots_on_) slots_[slot_of_[id]].pinned = 0;
  }
  /// Starts loading what on_pinned/on_unpinned of `id` read (a loop over a request's facts
  /// issues these first, so that their misses overlap).
  void prefetch_pin(FactId id) const {
    if (slots_on_ && id < slot_of_.size()) __builtin_prefetch(slot_of_.data() + id);
  }
  /// The second stage of prefetch_pin, once its line has had time to arrive: the slot record
  /// that on_pinned/on_unpinned of a resident `id` write.
  void prefetch_pin_slot(FactId id) const {
    if (slots_on_ && resident(id)) __builtin_prefetch(slots_.data() + slot_of_[id], 1);
  }
  /// Whether the policy is given slot ids (EvictionPolicy::slot_ids).
  bool slot_ids() const { return slots_on_; }
  /// Whether lookup_direct and insert_direct may be used: the eviction policy is the built-in
  /// LRU with slot ids, the tier is told of pins and admits everything. They then call the
  /// policy's own methods directly (no CacheEntry, no virtual call, no list of victims to copy)
  /// and decide exactly as lookup and insert do.
  bool direct() const { return lru_ != nullptr && tracks_pins_ && !ask_admission_; }
  /// lookup() on a direct tier, of a fact of `bytes`.
  bool lookup_direct(FactId id, std::uint64_t bytes) {
    const bool hit = resident(id);
    if (hit) hit_slot(id);
    count_lookups(1, bytes, hit ? 1 : 0, hit ? bytes : 0);
    return hit;
  }
  /// Makes ids below `n` valid for the unchecked calls of a direct tier (resident_unchecked,
  /// hit_slot, unpin_direct): a replica reserves its ids once, not a bounds check per fact.
  void reserve_ids(std::size_t n) {
    if (n > 0) grow(n - 1);
  }
  /// resident() of an id below reserve_ids' bound.
  bool resident_unchecked(FactId id) const {
    return (resident_bits_[id >> 6] >> (id & 63) & 1) != 0;
  }
  /// A direct lookup of an id below reserve_ids' bound, without its statistics (count_lookups
  /// adds a request's at once): on a hit LRU's update, and the fact's slot; else kNoSlot.
  std::uint32_t hit_slot(FactId id) {
    if (!resident_unchecked(id)) {
      // A miss is usually inserted soon: the line insert_direct writes starts loading now (a
      // store to a line not in the cache holds up every later store until it arrives).
      __builtin_prefetch(slot_of_.data() + id, 1);
      return kNoSlot;
    }
    const std::uint32_t s = slot_of_[id];
    lru_->hit(s);
    return s;
  }
  /// The statistics of lookup_direct calls made through hit_slot.
  void count_lookups(std::uint64_t lookups, std::uint64_t lookup_bytes, std::uint64_t hits,
                     std::uint64_t hit_bytes) {
    stats_.lookups += lookups;
    stats_.lookup_bytes += lookup_bytes;
    stats_.hits += hits;
    stats_.hit_bytes += hit_bytes;
  }
  /// on_pinned of the fact in slot `s` (hit_slot's answer) on a direct tier.
  void pin_slot(std::uint32_t s) {
    --unpinned_resident_;
    slots_[s].pinned = 1;
  }
  /// on_unpinned on a direct tier, of an id below reserve_ids' bound.
  void unpin_direct(FactId id) {
    if (!resident_unchecked(id)) return;
    ++unpinned_resident_;
    slots_[slot_of_[id]].pinned = 0;
  }
  /// prefetch_pin and prefetch_pin_slot on a direct tier, of an id below reserve_ids' bound.
  void prefetch_pin_direct(FactId id) const { __builtin_prefetch(slot_of_.data() + id); }
  void prefetch_pin_slot_direct(FactId id) const {
    if (resident_unchecked(id)) __builtin_prefetch(slots_.data() + slot_of_[id], 1);
  }
  /// A walk from the LRU tail of a direct tier that starts loading its next victims' records
  /// (slots, then residency words), so that a run of insertions finds them in the cache instead
  /// of waiting on each in turn. The victims come from LRU's queue in order (Lru::walk_next),
  /// whose loads do not wait on each other; a loop with work of its own takes one step an
  /// iteration. A hint: it changes nothing.
  struct VictimWalk {
    static constexpr std::uint32_t kMax = 64;
    std::size_t cursor = 0;   // into LRU's queue
    bool active = false;      // started, and the front not reached
    std::uint32_t steps = 0;  // to take at most
    std::uint32_t n = 0;      // walked
    std::uint32_t ids[kMax];
  };
  /// Starts a walk of up to `steps` victims; none when the last direct insertion evicted
  /// nothing (the tier is not full).
  void start_victim_walk(VictimWalk& w, std::uint32_t steps) const {
    w.n = 0;
    w.steps = std::min(steps, VictimWalk::kMax);
    // Any LRU tier with slot ids (a tier not told of pins has no count of unpinned facts).
    w.active =
        lru_ != nullptr && evicting_ && (!tracks_pins_ || unpinned_resident_ != 0) && w.steps > 0;
    w.cursor = w.active ? lru_->walk_start() : 0;
  }
  void step_victim_walk(VictimWalk& w) const {
    if (!w.active || w.n == w.steps) return;
    const std::uint32_t i = lru_->walk_next(w.cursor);
    if (i == LruOrder::kNil) {
      w.active = false;  // the front: nothing more to walk
      return;
    }
    w.ids[w.n++] = i;
    __builtin_prefetch(slots_.data() + i, 1);
  }
  /// Takes the walk's remaining steps, then starts loading the walked victims' residency words
  /// (drop writes them).
  void finish_victim_walk(VictimWalk& w) const;
  /// The fact in the slot of a walk's `i`th victim, once its line has had time to arrive (for
  /// the owner's next stage: its own records of the fact).
  FactId walked_fact(const VictimWalk& w, std::uint32_t i) const { return slots_[w.ids[i]].fact; }
  /// insert() on a direct tier, of a fact of `bytes` that is `pinned` (RunView::pinned) now.
  /// Evicted ids are appended to `evicted`.
  bool insert_direct(FactId id, std::uint64_t bytes, bool pinned, std::vector<FactId>& evicted) {
    return insert_direct(id, bytes, pinned, evicted, view_->unpin_count());
  }
  /// insert_direct with the view's RunView::unpin_count() given by the caller, who has it at
  /// hand (a replica is the view). Inline: it is one call per miss.
  [[gnu::always_inline]] bool insert_direct(FactId id, std::uint64_t bytes, bool pinned,
                                            std::vector<FactId>& evicted,
                                            std::uint64_t unpin_count) {
    INFERSCALE_ASSERT(direct() && !resident(id), "direct insert of a resident fact");
    // make_room and force_insert, step for step, with LRU's own methods.
    if (bytes > capacity_bytes_) {
      ++stats_.rejected;
      return false;
    }
    // The slot freed last, which take_slot would hand back: kept aside, not pushed and popped.
    std::uint32_t s = kNoSlot;
    evicting_ = used_bytes_ + bytes > capacity_bytes_;
    if (evicting_) {
      INFERSCALE_ASSERT(unpin_count == view_->unpin_count(), "a stale unpin count");
      const DirectPins pins{slots_.data(), unpin_count};
      do {
        const std::uint32_t v = unpinned_resident_ == 0 ? LruOrder::kNil : lru_->pick(pins);
        if (v == LruOrder::kNil) {
          if (s != kNoSlot) free_slots_.push_back(s);
          ++stats_.rejected;
          return false;
        }
        Slot& victim = slots_[v];
        INFERSCALE_ASSERT(victim.used && !victim.pinned, "LRU named a pinned victim");
        const FactId fact = victim.fact;
        // drop(fact, v) on a direct tier (slot ids, pins tracked, an unpinned victim), inline.
        resident_bits_[fact >> 6] &= ~(std::uint64_t{1} << (fact & 63));
        --resident_count_;
        --unpinned_resident_;
        used_bytes_ -= victim.bytes;
        victim.used = 0;
        if (s != kNoSlot) free_slots_.push_back(s);
        s = v;
        lru_->evict(v, pins);
        ++stats_.evictions;
        evicted.push_back(fact);
      } while (used_bytes_ + bytes > capacity_bytes_);
    }
    grow(id);
    resident_bits_[id >> 6] |= std::uint64_t{1} << (id & 63);
    used_bytes_ += bytes;
    ++resident_count_;
    if (!pinned) ++unpinned_resident_;
    ++stats_.inserts;
    stats_.peak_bytes = std::max(stats_.peak_bytes, used_bytes_);
    INFERSCALE_ASSERT(used_bytes_ <= capacity_bytes_, "tier capacity exceeded");
    if (s == kNoSlot) s = take_slot();
    slot_of_[id] = s;
    slots_[s] = Slot{id, bytes, 1, pinned ? 1u : 0u};  // one record, written whole
    lru_->insert(s);
    return true;
  }
  /// Whether a policy of the tier reads a CacheEntry's fields beyond id, tokens and bytes; if
  /// not, entries may leave them unset (a slot-id eviction policy, admission of everything).
  bool reads_entry_details() const { return !slots_on_ || ask_admission_; }
  /// Whether the tier's policies keep nothing of a fact once it left the tier (slot ids, no
  /// admission that learns from lookups): its owner may then renumber facts that are in no tier.
  bool forgets_removed() const { return slots_on_ && !ask_admission_; }
  /// The policy's victim for `ctx` (whose view speaks fact ids), as a fact id; for inspection
  /// (no side effects, like EvictionPolicy::victim).
  std::optional<FactId> victim(const EvictionContext& ctx) const;

  bool resident(FactId id) const {
    return (id >> 6) < resident_bits_.size() && (resident_bits_[id >> 6] >> (id & 63) & 1) != 0;
  }
  /// One lookup: informs both policies; on a hit also on_hit and the access time.
  bool lookup(const CacheEntry& e, SimTime now);
  /// Admission, then evictions until the fact fits. Evicted ids are appended to `evicted`.
  /// Returns false when not admitted or when pinned facts leave no room.
  bool insert(const CacheEntry& e, SimTime now, std::vector<FactId>* evicted);
  /// Inserts without asking admission (warm start, promotion decided elsewhere).
  bool force_insert(const CacheEntry& e, SimTime now, std::vector<FactId>* evicted);
  /// Removes a resident fact (invalidated or moved elsewhere).
  void remove(FactId id);

  /// Last access on this tier of a resident fact (its insertion time before any hit), when the
  /// eviction policy needs it (EvictionPolicy::needs_last_access); else kNever.
  SimTime last_access(FactId id) const {
    if (slots_on_) return resident(id) ? slot_last_access_[slot_of_[id]] : kNever;
    return id < last_access_.size() ? last_access_[id] : kNever;
  }
  std::uint64_t used_bytes() const { return used_bytes_; }
  std::uint64_t capacity_bytes() const { return capacity_bytes_; }
  std::uint64_t resident_count() const { return resident_count_; }
  const TierStats& stats() const { return stats_; }
  /// Statistics from now on, the peak from what the tier holds now.
  void restart_stats() {
    stats_ = TierStats{};
    stats_.peak_bytes = used_bytes_;
  }
  const std::string& name() const { return name_; }
  /// The eviction policy, for inspection (victim() is const and side-effect free). Its ids are
  /// slot ids when slot_ids(); StoreTier::victim translates.
  const EvictionPolicy& eviction_policy() const { return *eviction_; }

 private:
  /// A resident fact as a slot-id policy knows it: all an eviction reads of it, in 16 bytes.
  /// With pins tracked its pin flag too, so that checking a victim reads nothing of the owner's.
  struct Slot {
    FactId fact = 0;
    std::uint64_t bytes : 62 = 0;
    std::uint64_t used : 1 = 0;    // holds a resident fact
    std::uint64_t pinned : 1 = 0;  // with pins tracked: RunView::pinned(fact)
  };
  static_assert(sizeof(Slot) == 16);
  /// The run's view in slot ids, for a slot-id policy. Pins come from the slots when the tier
  /// is told of pin changes (set_view with tracks_pins), else from the outer view.
  class SlotView final : public RunView {
   public:
    const StoreTier* tier = nullptr;
    const RunView* outer = nullptr;
    bool use_flags = false;
    bool pinned(FactId slot) const override {
      if (use_flags) return tier->slots_[slot].pinned != 0;
      return outer != nullptr && outer->pinned(tier->slots_[slot].fact);
    }
    std::uint64_t unpin_count() const override {
      return outer != nullptr ? outer->unpin_count() : kUncountedPins;
    }
    bool user_in_flight(UserId user) const override {
      return outer != nullptr && outer->user_in_flight(user);
    }
    SimTime user_last_active(UserId user) const override {
      return outer != nullptr ? outer->user_last_active(user) : kNever;
    }
    std::int64_t next_access(FactId slot) const override {
      return outer != nullptr ? outer->next_access(tier->slots_[slot].fact) : kNever;
    }
    std::int64_t position() const override { return outer != nullptr ? outer->position() : 0; }
    FactId fact_id_bound() const override { return tier->slots_.size(); }
    void prefetch(FactId slot) const override {
      if (slot < tier->slots_.size()) __builtin_prefetch(tier->slots_.data() + slot);
    }
  };

  bool make_room(const CacheEntry& e, SimTime now, std::vector<FactId>* evicted);
  /// Makes `id` a valid index of the per-fact arrays (inline: it is one comparison per insert).
  void grow(FactId id) {
    if (id >= (slots_on_ ? slot_of_.size() : bytes_.size())) grow_to(id);
  }
  void grow_to(FactId id);
  /// Residency bookkeeping of a removal, without telling the policy; `slot`: the fact's slot
  /// with slot ids (the victim's answer: its slot_of_ entry is not read).
  void drop(FactId id, std::uint32_t slot);
  /// The fact a policy's answer names (a slot's fact with slot ids); throws PolicyContractError
  /// when it names no resident fact.
  FactId victim_fact(FactId v) const {
    if (slots_on_) {
      if (v < slots_.size() && slots_[v].used) return slots_[v].fact;
    } else if (resident(v)) {
      return v;
    }
    not_resident(v);
  }
  [[noreturn]] void not_resident(FactId v) const;
  /// What a direct policy call reads of pins: the slots' flags, the run's unpin count read once.
  struct DirectPins {
    const Slot* slots;
    std::uint64_t unpins;
    bool pinned(std::uint32_t slot) const { return slots[slot].pinned != 0; }
    std::uint64_t unpin_count() const { return unpins; }
    void prefetch(std::uint32_t slot) const { __builtin_prefetch(slots + slot); }
  };
  /// The slot of a new resident fact: the one freed last (inline: an insertion usually takes
  /// the slot its eviction freed), else a new one.
  std::uint32_t take_slot() {
    if (free_slots_.empty()) return new_slot();
    const std::uint32_t s = free_slots_.back();
    free_slots_.pop_back();
    return s;
  }
  std::uint32_t new_slot();

  std::string name_, eviction_name_;
  std::uint64_t capacity_bytes_;
  std::unique_ptr<EvictionPolicy> eviction_;
  std::unique_ptr<AdmissionPolicy> admission_;
  Lru* lru_ = nullptr;          // the eviction policy, when it is the built-in LRU with slot ids
  bool ask_admission_ = false;  // an admission policy that does not admit everything
  bool evicting_ = false;       // the last insertion evicted (start_victim_walk)
  const RunView* view_ = nullptr;
  // Residency is a bitmap (1M facts: 128 KiB, cache-resident), so a lookup touches no per-fact
  // memory of the tier; bytes (dictionary-coded) are read on eviction, last access only for
  // policies that use it.
  std::vector<std::uint64_t> resident_bits_;
  FactBytes bytes_;
  std::vector<SimTime> last_access_;
  bool track_last_access_ = false;
  std::uint64_t used_bytes_ = 0;
  std::uint64_t resident_count_ = 0;
  // With pins tracked: resident facts that are not pinned. None: every victim() answers nothing
  // (it may not name a pinned fact), so make_room does not ask. With a store full of facts that
  // running requests inject, that search would walk the pinned facts again after every unpin.
  bool tracks_pins_ = false;
  std::uint64_t unpinned_resident_ = 0;
  // With slot ids: by fact id its slot (valid while resident), by slot the fact's record, and
  // the free slots (most recently freed last).
  bool slots_on_ = false;
  std::vector<std::uint32_t> slot_of_;
  std::vector<Slot> slots_;
  std::vector<SimTime> slot_last_access_;  // by slot, with needs_last_access
  std::vector<std::uint32_t> free_slots_;
  SlotView slot_view_;
  TierStats stats_;
};

}  // namespace inferscale
