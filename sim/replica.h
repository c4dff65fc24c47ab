#pragma once
// @brief Replica: one GPU serving one model copy: memory model, fact store (GPU and host tiers),
// and the planning steps from which its batch scheduler (scheduler.name) composes one BatchPlan
// per step.

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "executor/executor.h"
#include "sim/batch_scheduler.h"
#include "sim/config/experiment.h"
#include "sim/fact_id_map.h"
#include "sim/fact_table.h"
#include "sim/node_store.h"
#include "sim/request.h"
#include "sim/store_tier.h"
#include "sim/user_map.h"

namespace inferscale {

/// Offline policies: trace position of the next request naming a (global) fact after trace
/// position `after`; kNever if none. Empty function: the future is unknown (always kNever).
using NextAccessFn = std::function<std::int64_t(FactId global, std::int64_t after)>;

/// What one step did, for metrics and invariant checks.
struct StepRecord {
  SimTime start = 0;
  SimTime duration_ns = 0;
  std::uint32_t batch_tokens = 0;  // decodes + prefill chunk tokens + encode tokens
  std::uint32_t sequences = 0;
  std::uint32_t prefills = 0, decodes = 0, encodes = 0, loads = 0;
  std::uint32_t async_loads = 0;  // issued to the copy engine in this step
  std::uint64_t kv_blocks_used = 0;
  std::uint64_t store_bytes = 0;
  PhaseTimes phases;  // as the executor reported them (zero where it does not split a step,
                      // and for a step started by run_decodes)
};

struct ReplicaStats {
  std::uint64_t steps = 0;
  SimTime busy_ns = 0;
  std::uint64_t preemptions = 0;
  std::uint64_t encodes = 0, encode_tokens = 0, memory_write_encodes = 0, private_encodes = 0;
  std::uint64_t loads = 0, offloads = 0;
  std::uint64_t max_batch_tokens_seen = 0;
  std::uint64_t max_kv_blocks_used = 0;
  double store_bytes_time_integral = 0;  // sum of store bytes x step duration
};

class Replica final : public RunView {
 public:
  /// `node`: the tiers below the GPU of this replica's node (null: none configured).
  Replica(int index, const RunConfig& cfg, FactTable& facts, RequestPool& pool, Executor& executor,
          NextAccessFn next_access = {}, NodeStore* node = nullptr);

  /// A routed request joins the waiting queue.
  void enqueue(std::uint32_t request, SimTime now);
  /// A new fact of a user homed here: encode it when there is room (kv_inject only).
  void memory_write(FactId global, SimTime now);
  /// Memory that exists at trace start: resident at t=0 if the store admits it (free of cost).
  void warm_insert(FactId global);
  /// Replica-local records: facts numbered by first sight here (through a hash map), users
  /// hashed, so that a replica costs what it sees, not the fleet's population. The same
  /// decisions (local ids follow first sight, as when a policy sees fact ids). Call before the
  /// first fact or request.
  void set_compact_ids();
  /// With compact ids and tiers whose policies forget removed facts (forgets_removed): frees the
  /// local records of facts in no tier and pinned by no request, for reuse. Runs by itself when a
  /// step begins, once as many records were taken as were live after the last sweep.
  void sweep_local_facts();
  /// Local fact records held (compact ids: live ones; else every fact seen here).
  std::size_t local_facts() const { return local_.size() - free_local_.size(); }
  /// Local fact records freed by sweeps so far.
  std::uint64_t local_facts_freed() const { return local_facts_freed_; }
  /// Whether sweeps free local records (compact ids and a GPU tier that forgets removed facts).
  bool frees_local_facts() const { return free_locals_; }
  /// The node's ids are this replica's local ids (NodeStore::set_recycle_ids): sweeps keep the
  /// records of the facts the node's tiers hold. These are the node's calls on them: the local
  /// id of `global` (a record made at first sight), or kNoLocal when it has none; the global id
  /// of a local one; the bound of local ids; a hint to load the map entry of `global` or the
  /// record of `local`.
  void share_ids_with_node() { node_ids_ = true; }
  static constexpr FactId kNoLocal = ~FactId{0};
  FactId node_id_of(FactId global) { return local_id(global); }
  FactId find_local(FactId global) const {
    const std::uint32_t l = local_map_.find(global);
    return l == 0 ? kNoLocal : l - 1;
  }
  FactId global_of_local(FactId local) const { return global_of(local); }
  FactId local_id_bound() const { return local_bound(); }
  void prefetch_local_map(FactId global) const { local_map_.prefetch(global); }
  void prefetch_local(FactId local) const {
    if (local < local_.size()) prefetch_kept(local_.data() + local);
  }
  /// Sends the warm facts still resident to the executor as encodes (without their CWE context),
  /// before the clock starts, so a real executor holds the KV the store says it holds. Their
  /// time is not counted.
  void preload();

  bool busy() const { return busy_; }
  bool has_work() const;
  /// Requests waiting or running (the least-loaded router's measure).
  std::size_t load() const { return waiting_.size() + running_.size(); }

  /// Plans one step at `now` with the scheduler, executes it, and returns its duration (the
  /// replica is busy until finish_step). Returns -1 when there is nothing to do.
  SimTime start_step(SimTime now);
  /// Applies the step's effects at its end; finished requests are appended to `finished`.
  void finish_step(SimTime now, std::vector<std::uint32_t>& finished);
  /// With store.host.async_loads: when an idle replica (start_step returned -1) has a request
  /// whose loads finish later, the time they do; kNever otherwise.
  SimTime wake_time() const;
  /// Prices one fact's host -> GPU copy (asynchronous loads); the copy engine is a queue.
  void set_load_cost(std::function<SimTime(std::uint64_t bytes)> cost) {
    load_cost_ = std::move(cost);
  }
  /// True when finish_step of the step in flight would finish a request (its last token).
  bool step_finishes_request() const;
  /// Fused steps (Simulator): the step in flight ends at `now` and finishes no request. When it
  /// is a steady decode step (every running request decodes, nothing else can join before a
  /// record reaches this replica), ends it and starts the next as finish_step and start_step
  /// would, and goes on while each step so ended ends before `bound` and finishes no request:
  /// the steps' time comes from Executor::price_decodes and the requests' state is brought up
  /// to date once. Leaves the step started last in flight (its start in `now`, its duration in
  /// `d`), each step's start appended to `starts`. Returns the steps started (0: none; then
  /// nothing changed).
  std::uint32_t run_decodes(SimTime& now, SimTime bound, std::vector<SimTime>& starts, SimTime& d);

  const StepRecord& last_step() const { return last_step_; }
  const ReplicaStats& stats() const { return stats_; }
  /// The GPU tier's statistics from now on (StoreTier::restart_stats).
  void restart_tier_stats() {
    if (gpu_) gpu_->restart_stats();
  }
  const StoreTier* gpu_tier() const { return gpu_.get(); }
  const NodeStore* node() const { return node_; }
  /// Whether a running request (or this step's placement) holds global fact `global`.
  bool pinned_global(FactId global) const;
  /// Starts loading what pinned_global(global) reads first (a hint).
  void prefetch_pin_record(FactId global) const {
    if (global_ids_) {
      if (global < pins_.size()) prefetch_kept(pins_.data() + global);
    } else if (compact_ids_) {
      local_map_.prefetch(global);
    } else if (global < local_plus1_.size()) {
      prefetch_kept(local_plus1_.data() + global);
    }
  }
  std::uint64_t total_kv_blocks() const { return total_blocks_; }
  std::uint64_t free_kv_blocks() const { return free_blocks_; }
  int index() const { return index_; }
  const BatchPlan& plan() const { return plan_; }

  // RunView (ids are this replica's local ids)
  bool pinned(FactId local) const override { return local < local_bound() && pin_count(local) > 0; }
  std::uint64_t unpin_count() const override { return unpins_; }
  bool user_in_flight(UserId user) const override;
  SimTime user_last_active(UserId user) const override;
  std::int64_t next_access(FactId local) const override;
  std::int64_t position() const override { return position_; }
  FactId fact_id_bound() const override { return local_bound(); }

 private:
  class Steps;  // the StepBuilder its scheduler plans a step with
  friend class Steps;

  // The planning steps of start_step (StepBuilder documents what each does).
  void begin_step(SimTime now);
  bool plan_decodes(std::uint32_t& budget);
  void plan_request_encodes(SimTime now, std::uint32_t& budget);
  void plan_prefills(SimTime now, std::uint32_t& budget);
  bool can_admit(std::uint32_t budget) const {
    return !preempted_this_step_ && !waiting_.empty() &&
           running_.size() < cfg_.scheduler.max_seqs && budget > 0;
  }
  void admit_waiting(SimTime now, std::uint32_t& budget);
  bool admit_waiting_at(std::size_t position, SimTime now, std::uint32_t& budget);
  /// Facts of the request that are not resident in the GPU tier (all of them without one).
  std::uint32_t gpu_misses(std::uint32_t ri) const;
  void plan_memory_writes(SimTime now, std::uint32_t& budget);
  /// Executes the plan and records the step; -1 (and the replica stays idle) when it is empty.
  SimTime execute_step(SimTime now);

  struct EncodeJob {
    FactId global = 0;
    std::uint32_t request = kNone;  // pool index of the request waiting for it (kNone: a write)
    RequestId request_id = 0;
    std::uint32_t fact_index = 0;  // index in that request's layout
  };
  static constexpr std::uint32_t kNone = 0xffffffffu;
  struct UserState {
    std::uint32_t in_flight = 0;
    SimTime last_active = kNever;
  };
  struct StepItem {
    std::uint32_t request;
    std::uint32_t tokens;  // prefill chunk tokens (0 for decode)
    bool decode;
    bool last_chunk;
  };

  FactId local_id(FactId global) {
    if (global_ids_) {
      if (global >= pins_.size()) add_global(global);
      return global;
    }
    if (compact_ids_) {
      const FactIdMap::Probe p = local_map_.probe(global);
      return p.value != 0 ? p.value - 1 : add_compact_local(global, p);
    }
    if (global < local_plus1_.size() && local_plus1_[global] != 0) return local_plus1_[global] - 1;
    return add_local(global);
  }
  /// Starts loading the records resolve_facts reads first of a fact (its entries in the
  /// replica's and the node's id maps), so that a request's lookups do not wait on each in turn.
  void prefetch_records(FactId global) const {
    if (compact_ids_) local_map_.prefetch(global);
    if (node_ != nullptr) node_->prefetch(global);
  }
  /// Starts loading what a request's evictions will read, in stages spread over
  /// resolve_facts (hints, as NodeStore::prefetch_host_victims): 0: the GPU and host tiers'
  /// next `n` victims' slots; 1: this replica's and the node's records of them; 2: the node's
  /// record and the fact table's entry of each GPU victim (its demotion reads them), the
  /// replicas' pins of each host victim.
  void prefetch_victims(int stage, std::uint32_t n = 0);
  FactId add_local(FactId global);  // first sight of `global` here, by dense ids
  /// The same with compact ids, `p` the local map's probe that found `global` absent.
  FactId add_compact_local(FactId global, const FactIdMap::Probe& p);
  void add_global(FactId global);  // with global_ids_: records up to `global`
  CacheEntry entry(FactId global, FactId local, SimTime) const {
    if (lite_entries_) {  // no policy reads more: the fact's other fields stay unread
      const std::uint32_t tokens = facts_.tokens(global).tokens;
      return lite_cache_entry(local, tokens, fact_store_bytes(tokens));
    }
    const FactInfo& f = facts_[global];
    return cache_entry(f, local, fact_store_bytes(f.tokens));
  }
  bool admit(std::uint32_t ri, SimTime now, std::uint32_t& budget);
  /// Looks up a request's facts, pins its GPU hits, promotes its host hits and queues encodes
  /// of its misses. On a direct replica with no encode queued before them, its encodes are
  /// planned at once from `budget` instead, until one does not fit (as admit's loop over the
  /// queue would plan them right after).
  void resolve_facts(std::uint32_t ri, SimTime now, std::uint32_t& budget);
  /// resolve_facts on a direct replica: one pass over the facts that looks them up and pins
  /// the hits at once (lookups read no pins, so every hit is still pinned before any
  /// placement), then the misses' encodes.
  void resolve_facts_direct(std::uint32_t ri, std::uint32_t& budget);
  /// Places a fact (its local id `local`) on the GPU tier, pinned: for `owner`'s layout entry `f`
  /// when given and not yet pinned (it holds the fact at least until the step ends), else until the
  /// step ends.
  bool insert_gpu(FactId global, FactId local, SimTime now, bool use_admission,
                  Request* owner = nullptr, RequestFact* f = nullptr) {
    if (!direct_) return insert_gpu_tiers(global, local, now, use_admission, owner, f);
    if (f != nullptr && f->pinned) owner = nullptr;
    return place_gpu_direct(local, facts_.tokens(global).tokens, owner, f);
  }
  /// insert_gpu on a direct replica: the fact at reserved id `local`, of `tokens` tokens, pinned
  /// for `owner` when given (its entry `f` not yet pinned). Forced inline: plan_encode_direct
  /// places each miss through it with the id and tokens it has already read, and as a call it costs
  /// 4 % more instructions in a one-replica run.
  [[gnu::always_inline]] bool place_gpu_direct(FactId local, std::uint32_t tokens, Request* owner,
                                               RequestFact* f) {
    // Admits everything: insert and force_insert agree. Inserted as pinned, since it is pinned
    // at once below: the tier's count of unpinned facts and the slot's flag end as add_pin
    // leaves them.
    const bool ok =
        gpu_->insert_direct(local, fact_store_bytes(tokens), true, plan_.evictions, unpins_);
    if (ok) {
      ++pin_count(local);
      if (owner != nullptr) {
        f->pinned = true;
        owner->pins.push_back(static_cast<std::uint32_t>(local));
      } else {
        step_pins_.push_back(local);
      }
    }
    return ok;
  }
  /// insert_gpu through the tiers' general calls (a host tier, another policy, admission).
  bool insert_gpu_tiers(FactId global, FactId local, SimTime now, bool use_admission,
                        Request* owner, RequestFact* f);
  /// A hit in a tier below the GPU (f.source): loaded into the GPU tier. Asynchronous (on the
  /// copy engine, the request's prefill waits for it) with store.host.async_loads, and always
  /// from the disk and remote tiers, whose reads into host memory come first.
  /// `host_sync`: a host hit loads inside the step whatever store.host.async_loads says.
  void promote_from_lower(Request& r, RequestFact& f, SimTime now, bool host_sync = false);
  /// Looks a GPU miss up below the GPU; on a hit sets f.source to the tier that holds it.
  bool lower_hit(FactId global, RequestFact& f, SimTime now);
  /// The plan's host evictions gain what left the node's host tier.
  void take_host_evictions();
  /// A filter of the facts in plan_.host_evictions (a bit a hash of the id; cleared as the
  /// step begins): a fact written to the host tier is looked for in that list only when its
  /// bit is set, not by a scan of the list at every written demotion.
  static std::uint32_t host_evicted_bit(FactId global) {
    return static_cast<std::uint32_t>((global * 0x9E3779B97F4A7C15ull) >> 54);
  }
  bool maybe_host_evicted(FactId global) const {
    const std::uint32_t b = host_evicted_bit(global);
    return (host_evicted_bits_[b / 64] >> (b % 64)) & 1;
  }
  /// A fact placed on the GPU by an encode: written at once to the tier below when the GPU
  /// tier writes through.
  void write_through(FactId global, SimTime now);
  bool loads_pending(const Request& r, SimTime now) const { return r.loads_ready > now; }
  /// Plans one encode job; false when it does not fit in the budget (try next step).
  bool plan_encode_job(const EncodeJob& job, SimTime now, std::uint32_t& budget);
  /// plan_encode_job of fact `global` for request `r`'s layout entry `f` (both null: a memory
  /// write). `fresh`: resolve_facts plans `f` itself, after its request's loads and earlier
  /// misses only, so `f->local` is its id (no sweep since) and no tier below the GPU holds it
  /// (none did then, and what they gained since are GPU victims, resident then, and the hits
  /// promoted through them).
  bool plan_encode(FactId global, Request* r, RequestFact* f, SimTime now, std::uint32_t& budget,
                   bool fresh = false);
  /// plan_encode of request `r`'s own miss `f` on a direct replica (no host tier, no
  /// asynchronous loads, local ids the global ids): the same steps, inline. Its encode is
  /// written at `enc_out`, a value-initialised entry of plan_.encodes, which it then advances.
  [[gnu::always_inline]] bool plan_encode_direct(Request& r, RequestFact& f, std::uint32_t& budget,
                                                 FactEncode*& enc_out) {
    const FactId global = f.global;          // the local id too, below the tier's reserved bound
    if (gpu_->resident_unchecked(global)) {  // placed meanwhile (a fact named twice)
      pin(r, f);
      --r.pending_encodes;
      return true;
    }
    const FactTokens& info = facts_.tokens(global);
    const std::uint32_t tokens = info.tokens + info.encode_context_tokens;
    if (tokens > cfg_.scheduler.max_batch_tokens) encode_too_large(global, tokens);
    if (tokens > budget) return false;
    const bool stored = place_gpu_direct(global, info.tokens, &r, &f);  // pinned for `r` if stored
    budget -= tokens;
    FactEncode& enc = *enc_out++;  // in place (see plan_encode)
    enc.fact = global;
    enc.user = r.user;
    enc.tokens = info.tokens;
    enc.context_tokens = info.encode_context_tokens;
    enc.store = stored;
    if (!stored) {
      enc.for_request = r.id;
      enc.position = f.position;
      enc.prompt_tokens = r.prompt_tokens;
      f.private_kv = true;
      ++stats_.private_encodes;
    }
    ++stats_.encodes;
    stats_.encode_tokens += tokens;
    step_tokens_ += tokens;
    --r.pending_encodes;
    return true;
  }
  [[noreturn]] void encode_too_large(FactId global, std::uint32_t tokens) const;
  std::uint32_t encode_tokens(FactId global) const {
    const FactTokens& t = facts_.tokens(global);
    return t.tokens + t.encode_context_tokens;
  }
  void plan_first_chunk_facts(Request& r, PrefillItem& item);
  bool plan_prefill_chunk(std::uint32_t ri, std::uint32_t& budget);
  void pin(Request& r, RequestFact& f);
  void unpin_all(Request& r);
  void preempt(std::uint32_t ri);
  /// Bytes a fact occupies in a store: the pool keeps KV in 16-token blocks, whole blocks.
  std::uint64_t fact_store_bytes(std::uint64_t tokens) const {
    return blocks_of(tokens) * kBlockTokens * fact_kv_bytes_per_token_;
  }
  /// Bytes a load or offload of a fact moves over PCIe: its tokens' rows (the store counts
  /// whole blocks, the copy does not move the unused rows of the last one).
  std::uint64_t move_bytes(std::uint64_t tokens) const { return tokens * fact_kv_bytes_per_token_; }
  void release_request(std::uint32_t ri);
  void unpin(FactId local) {
    if (--pin_count(local) != 0) return;
    ++unpins_;
    gpu_->on_unpinned(local);
  }
  void add_pin(FactId local) {
    if (pin_count(local)++ != 0) return;
    gpu_->on_pinned(local);
  }

  int index_;
  const RunConfig& cfg_;
  FactTable& facts_;
  RequestPool& pool_;
  Executor& executor_;
  NextAccessFn next_access_;
  std::unique_ptr<BatchScheduler> scheduler_;
  bool kv_inject_;
  bool async_loads_;  // a request may wait for asynchronous loads (host, disk or remote)
  bool host_async_;   // host hits load asynchronously (store.host.async_loads)
  std::uint64_t kv_bytes_per_token_;       // request KV, in the model's dtype
  std::uint64_t fact_kv_bytes_per_token_;  // stored fact KV, in store.kv_dtype
  std::function<SimTime(std::uint64_t)> load_cost_;
  SimTime copy_free_at_ = 0;  // the host-to-device copy engine's queue ends here
  SimTime d2h_free_at_ = 0;   // the device-to-host one's (offloads of asynchronous loads' victims)
  bool async_copy_ = false;   // insert_gpu is placing an asynchronous load
  std::array<std::uint64_t, 16> host_evicted_bits_{};  // see maybe_host_evicted
  /// By local id, with asynchronous loads: when the fact's last load is done (a request that
  /// finds it resident before then waits for it too).
  std::vector<SimTime> async_ready_;

  std::unique_ptr<StoreTier> gpu_;
  NodeStore* node_ = nullptr;  // the tiers below the GPU, shared with the node's replicas
  /// Local ids are the global ids when no policy sees them (every tier gives its policy slot
  /// ids, so no decision depends on their values): a user's facts, declared together, then have
  /// neighbouring records, and a request's lookups, pins and its facts' later evictions share
  /// cache lines instead of touching one line each. Otherwise local ids follow first sight here
  /// (a policy's ties may depend on them) through local_plus1_.
  bool global_ids_ = false;
  /// No tier's policy reads a CacheEntry beyond id, tokens and bytes (StoreTier::
  /// reads_entry_details): entries are built from FactTable::tokens alone.
  bool lite_entries_ = false;
  /// The GPU tier is direct (StoreTier::direct), there is no host tier and local ids are the
  /// global ids: lookups and insertions go through the tier's direct calls, victims straight
  /// into the plan.
  bool direct_ = false;
  std::vector<std::uint32_t> local_plus1_;  // global -> local + 1 (0: never seen here)
  bool compact_ids_ = false;                // local_map_ instead of local_plus1_
  FactIdMap local_map_;
  /// A fact as this replica knows it, by local id: one record, so that an eviction reads the
  /// victim's pins and global id in one cache line.
  struct LocalFact {
    std::uint32_t global = 0;
    std::uint16_t pins = 0;  // running requests (and this step's placement) holding it
  };
  std::vector<LocalFact> local_;                            // without global ids
  static constexpr std::uint32_t kFreeLocal = 0xffffffffu;  // LocalFact::global of a freed one
  bool free_locals_ = false;                                // sweep_local_facts frees records
  bool node_ids_ = false;  // the node names facts by these local ids (share_ids_with_node)
  std::vector<std::uint32_t> free_local_;  // freed local ids, the next one taken last
  std::size_t taken_since_sweep_ = 0;
  std::size_t sweep_after_ = kMinSweep;  // records taken before the next sweep
  static constexpr std::size_t kMinSweep = 4096;
  std::uint64_t local_facts_freed_ = 0;
  /// With global ids: the pin counts alone, 2 bytes a fact (the record's global id is the
  /// index), so that a request's pins and unpins touch a quarter of the lines.
  std::vector<std::uint16_t> pins_;
  std::size_t local_bound() const { return global_ids_ ? pins_.size() : local_.size(); }
  std::uint16_t& pin_count(FactId local) { return global_ids_ ? pins_[local] : local_[local].pins; }
  std::uint16_t pin_count(FactId local) const {
    return global_ids_ ? pins_[local] : local_[local].pins;
  }
  FactId global_of(FactId local) const { return global_ids_ ? local : local_[local].global; }
  /// Layouts and pin lists of released requests, most recent last: an admitted request takes
  /// one whose lines are still in the cache (its own, in the pool since its arrival, are not).
  std::vector<std::vector<RequestFact>> spare_layouts_;
  std::vector<std::vector<std::uint32_t>> spare_pins_;
  std::uint64_t unpins_ = 0;        // pins that dropped to zero (RunView::unpin_count)
  std::uint32_t last_encodes_ = 0;  // misses to encode of the last request resolved (direct)
  StoreTier::VictimWalk gpu_walk_;  // prefetch_victims' walk of the GPU tier's next victims
  UserMap<UserState> users_;

  std::deque<std::uint32_t> waiting_;
  std::vector<std::uint32_t> running_;  // admission order
  std::deque<EncodeJob> request_jobs_;
  std::deque<EncodeJob> write_jobs_;
  std::vector<RequestId> to_release_;

  std::uint64_t total_blocks_ = 0;
  std::uint64_t free_blocks_ = 0;
  bool busy_ = false;
  /// The step in flight decodes every running request and does nothing else, no encode job is
  /// queued and no waiting request could be admitted (nor can be until a record arrives: free
  /// KV blocks only shrink while decoding): the next step is the same but for its contexts.
  bool steady_ = false;
  BatchPlan plan_;
  std::vector<StepItem> items_;
  std::vector<FactId> evicted_;
  std::vector<FactId> step_pins_;  // facts placed in this step, pinned until it ends
  bool warmed_ = false;            // facts were warm-inserted, until preload()
  bool preempted_this_step_ = false;
  std::int64_t position_ = 0;  // trace position of the request being admitted
  std::uint32_t step_tokens_ = 0;
  StepRecord last_step_;
  ReplicaStats stats_;
};

}  // namespace inferscale
