#pragma once
// @brief StoreTier: one tier (GPU or host) of a replica's fact-KV store: a byte capacity, an
// admission and an eviction policy, and the residency they decide. Ids are the replica's dense
// fact ids.

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "policies/policy.h"

namespace inferscale {

/// A policy broke its contract (returned a pinned or non-resident victim). Not user input: the
/// run stops with this message instead of corrupting the store.
class PolicyContractError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TierStats {
  std::uint64_t lookups = 0, hits = 0;
  std::uint64_t lookup_bytes = 0, hit_bytes = 0;
  std::uint64_t inserts = 0, rejected = 0, evictions = 0;
  std::uint64_t peak_bytes = 0;
};

class StoreTier {
 public:
  StoreTier(std::string name, std::uint64_t capacity_bytes,
            std::unique_ptr<EvictionPolicy> eviction, std::unique_ptr<AdmissionPolicy> admission,
            std::string eviction_name = {});

  /// The run's view (pins, users, future); set before the first access. Also given to the
  /// eviction policy (EvictionPolicy::attach).
  void set_view(const RunView* view) {
    view_ = view;
    eviction_->attach(view);
  }

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
    return id < last_access_.size() ? last_access_[id] : kNever;
  }
  std::uint64_t used_bytes() const { return used_bytes_; }
  std::uint64_t capacity_bytes() const { return capacity_bytes_; }
  std::uint64_t resident_count() const { return resident_count_; }
  const TierStats& stats() const { return stats_; }
  const std::string& name() const { return name_; }
  /// The eviction policy, for inspection (victim() is const and side-effect free).
  const EvictionPolicy& eviction_policy() const { return *eviction_; }

 private:
  bool make_room(const CacheEntry& e, SimTime now, std::vector<FactId>* evicted);
  void grow(FactId id);
  void drop(FactId id);  // residency bookkeeping of a removal, without telling the policy

  std::string name_, eviction_name_;
  std::uint64_t capacity_bytes_;
  std::unique_ptr<EvictionPolicy> eviction_;
  std::unique_ptr<AdmissionPolicy> admission_;
  const RunView* view_ = nullptr;
  // Residency is a bitmap (1M facts: 128 KiB, cache-resident), so a lookup touches no per-fact
  // memory of the tier; bytes are read on eviction, last access only for policies that use it.
  std::vector<std::uint64_t> resident_bits_;
  std::vector<std::uint64_t> bytes_;
  std::vector<SimTime> last_access_;
  bool track_last_access_ = false;
  std::uint64_t used_bytes_ = 0;
  std::uint64_t resident_count_ = 0;
  TierStats stats_;
};

}  // namespace inferscale
