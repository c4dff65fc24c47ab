#pragma once
// @brief The fact store below the GPU: per node a host DRAM tier and a local NVMe tier that the
// node's replicas share, and the fleet's remote KV store; the links that reach them (the node's
// NVMe drives, its network link) and what each tier and link did. Ids are global fact ids; each
// store numbers the facts it sees by first sight (a node of one replica may use its replica's
// numbers: NodeStore::set_recycle_ids).

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "sim/config/experiment.h"
#include "sim/fact_id_map.h"
#include "sim/fact_table.h"
#include "sim/store_tier.h"

namespace inferscale {

enum class TierLevel : std::uint8_t { kGpu = 0, kHost = 1, kDisk = 2, kRemote = 3 };
inline constexpr int kTierLevels = 4;
const char* to_string(TierLevel t);

/// A tier with the policies its config names (seeded by `seed`).
std::unique_ptr<StoreTier> make_store_tier(const char* name, const TierConfig& t,
                                           std::uint64_t seed, bool fast_paths);

/// @brief A transfer path of fixed bandwidth: transfers pass one after another at its
/// bandwidth, each arrives `latency` after its last byte was sent, and at most `queue_depth`
/// are in flight (0: no limit), so a transfer waits for the oldest of those to arrive.
class Link {
 public:
  Link() = default;
  Link(double gbps, double latency_us, std::uint32_t queue_depth);
  /// A transfer of `bytes` that may start at `now`: when its data has arrived.
  SimTime transfer(std::uint64_t bytes, SimTime now);
  /// One transfer on the wire, [start, end), for checking that the link is never oversubscribed.
  struct Busy {
    SimTime start, end;
    std::uint64_t bytes;
  };
  void set_log(std::vector<Busy>* log) { log_ = log; }
  double gbps() const { return bytes_per_ns_; }
  std::uint64_t bytes() const { return bytes_; }
  std::uint64_t transfers() const { return transfers_; }
  SimTime busy_ns() const { return busy_ns_; }

 private:
  double bytes_per_ns_ = 0;  // GB/s = bytes per ns
  SimTime latency_ns_ = 0;
  SimTime free_at_ = 0;
  std::vector<SimTime> arrivals_;  // ring: arrival times of the last queue_depth transfers
  std::size_t next_ = 0;
  std::uint64_t bytes_ = 0, transfers_ = 0;
  SimTime busy_ns_ = 0;
  std::vector<Busy>* log_ = nullptr;
};

/// What moved through one tier, besides its StoreTier statistics (lookups, hits, evictions).
struct TierFlow {
  std::uint64_t loads = 0;      // facts read out of the tier towards the GPU
  std::uint64_t bytes_out = 0;  // of those
  std::uint64_t bytes_in = 0,
                writes = 0;  // facts written into the tier (demoted, promoted, written through)
  std::uint64_t drops = 0;   // evicted and written to no tier below
  SimTime load_wait_ns = 0;  // per load: from its issue until its data is on the GPU
};

class Replica;

/// @brief The fleet's remote KV store: one tier over the network, shared by every node.
class RemoteStore {
 public:
  RemoteStore(const RunConfig& cfg, const FactTable& facts);
  StoreTier& tier() { return *tier_; }
  const StoreTier& tier() const { return *tier_; }
  /// This store's id of `global`, numbered on first sight (the global id itself where the
  /// tier's policy sees slots, not ids).
  FactId id_of(FactId global);
  /// Its id, or kAbsent when never seen (with global ids: the id, held or not).
  FactId find(FactId global) const {
    if (global_ids_) return global;
    const std::uint32_t i = ids_.find(global);
    return i == 0 ? kAbsent : i - 1;
  }
  FactId global_of(FactId id) const { return global_ids_ ? id : globals_[id]; }
  static constexpr FactId kAbsent = ~FactId{0};
  TierFlow flow;

 private:
  /// Nothing pins a remote copy; its users are the fleet's, which it does not follow.
  class View final : public RunView {
   public:
    const RemoteStore* store = nullptr;
    bool pinned(FactId) const override { return false; }
    std::uint64_t unpin_count() const override { return 0; }
    bool user_in_flight(UserId) const override { return false; }
    SimTime user_last_active(UserId) const override { return kNever; }
    std::int64_t next_access(FactId) const override { return kNever; }
    std::int64_t position() const override { return 0; }
    FactId fact_id_bound() const override {
      return store->global_ids_ ? store->facts_.size() : store->globals_.size();
    }
  };
  const FactTable& facts_;
  std::unique_ptr<StoreTier> tier_;
  /// One store for the fleet, which may come to hold the whole population: where no decision
  /// depends on id values (StoreTier::slot_ids), its ids are the global ids (no map entry and
  /// reverse entry a fact).
  bool global_ids_ = false;
  FactIdMap ids_;
  std::vector<FactId> globals_;
  View view_;
};

/// @brief One node's tiers below its replicas' GPUs: host DRAM and local NVMe (each enabled or
/// not), its links (NVMe reads and writes, the network link each way) and the remote store it
/// reaches. A fact written into a tier that evicts others passes them down the chain by each
/// tier's write policy (store.<tier>.write).
class NodeStore {
 public:
  NodeStore(int index, const RunConfig& cfg, const FactTable& facts, RemoteStore* remote,
            std::function<std::int64_t(FactId global, std::int64_t after)> next_access = {});
  NodeStore(NodeStore&&) = delete;  // its view points to it

  /// A replica of this node (its pins keep facts in the node's tiers as they do on its GPU).
  void add_replica(Replica* r) { view_.replicas.push_back(r); }
  /// The replica acting now (an offline policy reads the future from its trace position).
  void set_acting(const Replica* r) { view_.acting = r; }

  /// Looks `global` up in each tier below the GPU, top down, as a request does (each tier
  /// counts a lookup until one holds it): the tier it is found in, kGpu when none holds it.
  TierLevel lookup(FactId global, SimTime now);
  /// Starts loading this node's record of `global` (its id), which lookup, resident and write
  /// read first (a hint).
  void prefetch(FactId global) const;
  /// Starts loading what the host tier's next evictions read, in stages that a caller spreads
  /// over its own work so that each stage's lines have arrived when the next reads them (hints:
  /// they change nothing): 0: walks the host LRU's next `n` victims (their slots); 1: this
  /// node's records of them; 2: its replicas' records of them (their pins, which an eviction
  /// checks).
  void prefetch_host_victims(int stage, std::uint32_t n = 0);
  /// Whether tier `t` holds `global` (no lookup counted).
  bool resident(FactId global, TierLevel t) const;
  /// The highest tier below the GPU holding `global`, kGpu when none (no lookup counted).
  TierLevel highest(FactId global) const;
  /// Reads a fact found in the disk or remote tier into host memory over that tier's link and
  /// promotes it into the enabled tiers above it: when its data is in host memory. Host hits
  /// are in host memory at once (`now`).
  SimTime fetch(FactId global, TierLevel from, std::uint64_t bytes, SimTime now);
  /// No node id known (write, demote): they look it up.
  static constexpr FactId kNoId = ~FactId{0};
  /// Writes `global` into tier `t` (a demotion, a write-through or a promotion), over the tier's
  /// write link; what it evicts goes down by that tier's write policy. False when the tier did
  /// not keep it (held already counts as kept). `node_id`: its id on this node when the caller
  /// knows it (host or disk tier), so that it is not looked up.
  bool write(FactId global, TierLevel t, SimTime now, FactId node_id = kNoId);
  enum class Demotion { kWritten, kHeld, kDropped };
  /// `global` leaves tier `t` (an eviction that writes back): written into the first tier below
  /// it that keeps it (one full of pinned facts, or whose admission refuses, passes it further
  /// down). kHeld: a tier below holds it already; kDropped: none keeps it. `node_id` as write's
  /// (a replica whose local ids the node uses knows its victims').
  Demotion demote(FactId global, TierLevel t, SimTime now, FactId node_id = kNoId);
  /// The first enabled tier below `t`, kGpu when none.
  TierLevel below(TierLevel t) const;
  /// Facts that left the host tier since the last call (a real executor drops their copies).
  std::vector<FactId>& host_evicted() { return host_evicted_; }

  /// Records a load from tier `t` of `bytes`, issued at `issued`, on the GPU at `ready`.
  void count_load(TierLevel t, std::uint64_t bytes, SimTime issued, SimTime ready);
  /// Before the clock starts (a warm store): writes take no link time and are not counted.
  void set_warming(bool on) { warming_ = on; }
  /// The host and disk tiers' statistics from now on (StoreTier::restart_stats).
  void restart_tier_stats() {
    if (host_) host_->restart_stats();
    if (disk_) disk_->restart_stats();
  }
  /// Frees and reuses the ids of facts that no tier of the node holds (see sweep_ids), where
  /// the node's tiers allow it; the fleet's choice of compact records (SimOutputs::compact_ids).
  /// A node of one replica that frees its own records (Replica::set_compact_ids) then names
  /// facts by that replica's local ids instead: one record and one map entry a fact on the
  /// node, not two (the replica keeps the records of the facts the node's tiers hold).
  void set_recycle_ids();
  /// Whether a tier of the node (host, disk) holds node id `id`.
  bool holds(FactId id) const {
    return (host_ && host_->resident(id)) || (disk_ && disk_->resident(id));
  }
  /// Frees the ids of facts that no tier of the node holds once as many were taken as were
  /// live after the last sweep (where ids are recycled); only where no caller holds an id (a
  /// lookup, the end of a warm insertion).
  void sweep_ids_if_due() {
    if (recycle_ids_ && taken_since_sweep_ >= sweep_after_) sweep_ids();
  }
  /// The ids held now (after a last sweep where ids are recycled) and the facts the node's
  /// tiers hold (not written; checked by the tests).
  std::size_t ids_held();
  /// The id records allocated: the most ids the node has held at once.
  std::size_t id_records() const;
  std::uint64_t resident_facts() const;

  const StoreTier* tier(TierLevel t) const;
  StoreTier* tier(TierLevel t);
  TierFlow& flow(TierLevel t);
  const TierFlow& flow(TierLevel t) const { return const_cast<NodeStore*>(this)->flow(t); }
  Link& disk_read() { return disk_read_; }
  Link& disk_write() { return disk_write_; }
  Link& net_in() { return net_in_; }
  Link& net_out() { return net_out_; }
  const Link& disk_read() const { return disk_read_; }
  const Link& disk_write() const { return disk_write_; }
  const Link& net_in() const { return net_in_; }
  const Link& net_out() const { return net_out_; }
  int index() const { return index_; }
  /// Bytes a fact of `tokens` occupies in a tier (whole 16-token blocks, store.kv_dtype).
  std::uint64_t stored_bytes(std::uint32_t tokens) const;
  /// Bytes a transfer of a fact of `tokens` moves (its rows, store.kv_dtype).
  std::uint64_t moved_bytes(std::uint32_t tokens) const {
    return std::uint64_t(tokens) * fact_bytes_per_token_;
  }

 private:
  /// The node's pins, users and future as its tiers' policies see them (ids: this node's).
  class View final : public RunView {
   public:
    const NodeStore* node = nullptr;
    std::vector<Replica*> replicas;
    const Replica* acting = nullptr;
    bool pinned(FactId id) const override;
    std::uint64_t unpin_count() const override;
    bool user_in_flight(UserId user) const override;
    SimTime user_last_active(UserId user) const override;
    std::int64_t next_access(FactId id) const override;
    std::int64_t position() const override;
    FactId fact_id_bound() const override;
  };
  FactId id_of(FactId global);
  /// The global id of node id `id`.
  FactId global_of(FactId id) const;
  /// Frees the ids of the facts that no tier of the node holds (their records would otherwise
  /// grow with every fact the node has ever held): when every tier of the node places by slot
  /// and learns nothing from misses (StoreTier::forgets_removed), an id is only a name.
  void sweep_ids();
  FactId find(FactId global) const;
  static constexpr FactId kAbsent = ~FactId{0};
  CacheEntry entry(const StoreTier& tier, FactId global, FactId id) const;
  const TierConfig& config(TierLevel t) const;

  int index_;
  const RunConfig& cfg_;
  const FactTable& facts_;
  RemoteStore* remote_;
  std::function<std::int64_t(FactId, std::int64_t)> next_access_;
  std::uint64_t fact_bytes_per_token_;
  std::unique_ptr<StoreTier> host_, disk_;
  FactIdMap ids_;
  std::vector<FactId> globals_;
  Replica* shared_ = nullptr;  // set: the node's ids are this replica's local ids
  static constexpr FactId kFreeId = ~FactId{0} - 1;  // globals_ of a freed id
  bool recycle_ids_ = false;
  std::vector<FactId> free_ids_;  // freed ids, the next one taken last
  std::size_t taken_since_sweep_ = 0;
  std::size_t sweep_after_ = kMinSweep;  // ids taken before the next sweep
  static constexpr std::size_t kMinSweep = 4096;
  Link disk_read_, disk_write_, net_in_, net_out_;
  std::array<TierFlow, 3> flows_;  // gpu (loads into it), host, disk
  TierFlow no_remote_;             // stays empty: the fleet has no remote tier
  std::vector<FactId> host_evicted_;
  std::array<std::vector<FactId>, kTierLevels> evicted_;  // write's victims, by tier (reused)
  StoreTier::VictimWalk host_walk_;                       // prefetch_host_victims'
  bool warming_ = false;
  View view_;
};

}  // namespace inferscale
