#include "sim/node_store.h"

#include <algorithm>
#include <cmath>

#include "policies/registry.h"
#include "sim/replica.h"
#include "traces/error.h"

namespace inferscale {

const char* to_string(TierLevel t) {
  switch (t) {
    case TierLevel::kGpu:
      return "gpu";
    case TierLevel::kHost:
      return "host";
    case TierLevel::kDisk:
      return "disk";
    case TierLevel::kRemote:
      return "remote";
  }
  return "?";
}

std::unique_ptr<StoreTier> make_store_tier(const char* name, const TierConfig& t,
                                           std::uint64_t seed, bool fast_paths) {
  PolicyArgs ev{t.eviction_params, t.capacity_bytes, seed};
  PolicyArgs ad{t.admission_params, t.capacity_bytes, seed ^ 0x9e3779b97f4a7c15ull};
  auto eviction = PolicyRegistry::make_eviction(t.eviction, ev, t.eviction_where);
  auto admission = PolicyRegistry::make_admission(t.admission, ad, t.admission_where);
  return std::make_unique<StoreTier>(name, t.capacity_bytes, std::move(eviction),
                                     std::move(admission), t.eviction, fast_paths);
}

Link::Link(double gbps, double latency_us, std::uint32_t queue_depth)
    : bytes_per_ns_(gbps),
      latency_ns_(static_cast<SimTime>(std::llround(latency_us * 1e3))),
      arrivals_(queue_depth, 0) {}

SimTime Link::transfer(std::uint64_t bytes, SimTime now) {
  INFERSCALE_ASSERT(bytes_per_ns_ > 0, "a transfer on a link without bandwidth");
  SimTime start = std::max(now, free_at_);
  if (!arrivals_.empty()) start = std::max(start, arrivals_[next_]);  // the oldest in flight
  // Whole nanoseconds, rounded up: the link never carries more than its bandwidth.
  const auto wire = static_cast<SimTime>(std::ceil(double(bytes) / bytes_per_ns_));
  const SimTime end = start + wire;
  free_at_ = end;
  const SimTime arrival = end + latency_ns_;
  if (!arrivals_.empty()) {
    arrivals_[next_] = arrival;
    next_ = (next_ + 1) % arrivals_.size();
  }
  bytes_ += bytes;
  ++transfers_;
  busy_ns_ += wire;
  if (log_ != nullptr) log_->push_back(Busy{start, end, bytes});
  return arrival;
}

RemoteStore::RemoteStore(const RunConfig& cfg, const FactTable& facts)
    : facts_(facts),
      tier_(make_store_tier("remote", cfg.store.remote, cfg.seed * 1000003ull + 0x7e3077e,
                            cfg.fast_paths)) {
  view_.store = this;
  tier_->set_view(&view_);
  global_ids_ = tier_->slot_ids();
}

FactId RemoteStore::id_of(FactId global) {
  if (global_ids_) return global;
  const std::uint32_t i = ids_.find(global);
  if (i != 0) return i - 1;
  globals_.push_back(global);
  ids_.insert(global, static_cast<std::uint32_t>(globals_.size()));
  return globals_.size() - 1;
}

NodeStore::NodeStore(int index, const RunConfig& cfg, const FactTable& facts, RemoteStore* remote,
                     std::function<std::int64_t(FactId, std::int64_t)> next_access)
    : index_(index),
      cfg_(cfg),
      facts_(facts),
      remote_(remote),
      next_access_(std::move(next_access)),
      fact_bytes_per_token_(cfg.fact_kv_bytes_per_token_per_gpu()) {
  const std::uint64_t seed =
      cfg.seed * 1000003ull + 0x40de00ull + static_cast<std::uint64_t>(index);
  view_.node = this;
  if (cfg.store.host.enabled) {
    host_ = make_store_tier("host", cfg.store.host, seed + 17, cfg.fast_paths);
    host_->set_view(&view_);
  }
  if (cfg.store.disk.enabled) {
    disk_ = make_store_tier("disk", cfg.store.disk, seed + 29, cfg.fast_paths);
    disk_->set_view(&view_);
    disk_read_ =
        Link(cfg.store.disk.read_gbps, cfg.store.disk.latency_us, cfg.store.disk.queue_depth);
    disk_write_ =
        Link(cfg.store.disk.write_gbps, cfg.store.disk.latency_us, cfg.store.disk.queue_depth);
  }
  if (cfg.store.remote.enabled) {
    INFERSCALE_ASSERT(remote_ != nullptr, "a remote tier without its store");
    net_in_ = Link(cfg.store.remote.read_gbps, cfg.store.remote.latency_us, 0);
    net_out_ = Link(cfg.store.remote.write_gbps, cfg.store.remote.latency_us, 0);
  }
}

FactId NodeStore::id_of(FactId global) {
  if (shared_) return shared_->node_id_of(global);
  const std::uint32_t i = ids_.find(global);
  if (i != 0) return i - 1;
  ++taken_since_sweep_;
  if (!free_ids_.empty()) {
    const FactId id = free_ids_.back();
    free_ids_.pop_back();
    globals_[id] = global;
    ids_.insert(global, static_cast<std::uint32_t>(id + 1));
    return id;
  }
  globals_.push_back(global);
  ids_.insert(global, static_cast<std::uint32_t>(globals_.size()));
  return globals_.size() - 1;
}

void NodeStore::set_recycle_ids() {
  // Only where no tier of the node tells ids apart (see sweep_ids).
  recycle_ids_ = (host_ || disk_) && (!host_ || host_->forgets_removed()) &&
                 (!disk_ || disk_->forgets_removed());
  if (recycle_ids_ && view_.replicas.size() == 1 && view_.replicas[0]->frees_local_facts()) {
    shared_ = view_.replicas[0];
    shared_->share_ids_with_node();
    recycle_ids_ = false;  // the replica's sweeps free the records
  }
}

std::size_t NodeStore::ids_held() {
  if (shared_) return resident_facts();  // the replica's records of what the tiers hold
  if (recycle_ids_) sweep_ids();
  return globals_.size() - free_ids_.size();
}

std::size_t NodeStore::id_records() const {
  return shared_ ? 0 : globals_.size();
}

FactId NodeStore::find(FactId global) const {
  if (shared_) return shared_->find_local(global);  // kNoLocal is kAbsent
  const std::uint32_t i = ids_.find(global);
  return i == 0 ? kAbsent : i - 1;
}

FactId NodeStore::global_of(FactId id) const {
  return shared_ ? shared_->global_of_local(id) : globals_[id];
}

void NodeStore::prefetch(FactId global) const {
  if (shared_) {
    shared_->prefetch_local_map(global);
  } else {
    ids_.prefetch(global);
  }
}

std::uint64_t NodeStore::resident_facts() const {
  return (host_ ? host_->resident_count() : 0) + (disk_ ? disk_->resident_count() : 0);
}

void NodeStore::sweep_ids() {
  taken_since_sweep_ = 0;
  // Descending, so that the lowest freed id is taken first.
  for (std::size_t id = globals_.size(); id-- > 0;) {
    if (globals_[id] == kFreeId || holds(id)) continue;
    globals_[id] = kFreeId;
    free_ids_.push_back(id);
  }
  ids_.rebuild(
      globals_.size(), [this](std::size_t id) { return globals_[id]; }, kFreeId);
  sweep_after_ = std::max(kMinSweep, globals_.size() - free_ids_.size());
}

std::uint64_t NodeStore::stored_bytes(std::uint32_t tokens) const {
  return blocks_of(tokens) * kBlockTokens * fact_bytes_per_token_;
}

CacheEntry NodeStore::entry(const StoreTier& tier, FactId global, FactId id) const {
  if (!tier.reads_entry_details()) {
    // No policy of the tier reads more: no search of the fact table's runs for its user.
    const std::uint32_t tokens = facts_.tokens(global).tokens;
    return lite_cache_entry(id, tokens, stored_bytes(tokens));
  }
  const FactInfo& f = facts_[global];
  return cache_entry(f, id, stored_bytes(f.tokens));
}

const TierConfig& NodeStore::config(TierLevel t) const {
  switch (t) {
    case TierLevel::kHost:
      return cfg_.store.host;
    case TierLevel::kDisk:
      return cfg_.store.disk;
    case TierLevel::kRemote:
      return cfg_.store.remote;
    default:
      return cfg_.store.gpu;
  }
}

const StoreTier* NodeStore::tier(TierLevel t) const {
  return const_cast<NodeStore*>(this)->tier(t);
}

StoreTier* NodeStore::tier(TierLevel t) {
  switch (t) {
    case TierLevel::kHost:
      return host_.get();
    case TierLevel::kDisk:
      return disk_.get();
    case TierLevel::kRemote:
      return cfg_.store.remote.enabled ? &remote_->tier() : nullptr;
    default:
      return nullptr;
  }
}

TierFlow& NodeStore::flow(TierLevel t) {
  if (t == TierLevel::kRemote) return remote_ != nullptr ? remote_->flow : no_remote_;
  return flows_[static_cast<int>(t)];
}

TierLevel NodeStore::below(TierLevel t) const {
  for (int l = static_cast<int>(t) + 1; l < kTierLevels; ++l) {
    if (tier(static_cast<TierLevel>(l)) != nullptr) return static_cast<TierLevel>(l);
  }
  return TierLevel::kGpu;
}

bool NodeStore::resident(FactId global, TierLevel t) const {
  const StoreTier* s = tier(t);
  if (s == nullptr) return false;
  if (t == TierLevel::kRemote) {
    const FactId id = remote_->find(global);
    return id != RemoteStore::kAbsent && s->resident(id);
  }
  const FactId id = find(global);
  return id != kAbsent && s->resident(id);
}

void NodeStore::prefetch_host_victims(int stage, std::uint32_t n) {
  if (!host_) return;
  StoreTier::VictimWalk& w = host_walk_;
  if (stage == 0) {
    host_->start_victim_walk(w, n);
    host_->finish_victim_walk(w);
    return;
  }
  for (std::uint32_t i = 0; i < w.n; ++i) {
    const FactId id = host_->walked_fact(w, i);
    if (shared_) {  // its record holds its pins
      if (stage == 1) shared_->prefetch_local(id);
      continue;
    }
    if (id >= globals_.size()) continue;
    if (stage == 1) {
      __builtin_prefetch(globals_.data() + id);
    } else {
      for (const Replica* r : view_.replicas) r->prefetch_pin_record(globals_[id]);
    }
  }
}

TierLevel NodeStore::highest(FactId global) const {
  for (const TierLevel t : {TierLevel::kHost, TierLevel::kDisk, TierLevel::kRemote}) {
    if (resident(global, t)) return t;
  }
  return TierLevel::kGpu;
}

TierLevel NodeStore::lookup(FactId global, SimTime now) {
  // Here, where no caller holds a node id: a sweep frees ids that other calls are using.
  sweep_ids_if_due();
  for (const TierLevel t : {TierLevel::kHost, TierLevel::kDisk, TierLevel::kRemote}) {
    StoreTier* s = tier(t);
    if (s == nullptr) continue;
    const bool remote = t == TierLevel::kRemote;
    if (s->forgets_removed()) {
      // No policy of the tier learns from a miss: a fact it never held gets no id here (the
      // ids are first written by write()), and its miss is only counted.
      const FactId id = remote ? remote_->find(global) : find(global);
      if (id == kAbsent || !s->resident(id)) {
        s->count_lookups(1, stored_bytes(facts_.tokens(global).tokens), 0, 0);
        continue;
      }
      if (s->lookup(entry(*s, global, id), now)) return t;
      continue;
    }
    const FactId id = remote ? remote_->id_of(global) : id_of(global);
    if (s->lookup(entry(*s, global, id), now)) return t;
  }
  return TierLevel::kGpu;
}

SimTime NodeStore::fetch(FactId global, TierLevel from, std::uint64_t bytes, SimTime now) {
  SimTime ready = now;
  if (from == TierLevel::kDisk) ready = disk_read_.transfer(bytes, now);
  if (from == TierLevel::kRemote) ready = net_in_.transfer(bytes, now);
  // Promoted into every enabled tier above the one it was found in: through host memory on
  // its way (no other link), and onto the NVMe drives over their write link.
  for (int l = static_cast<int>(from) - 1; l >= static_cast<int>(TierLevel::kHost); --l) {
    const auto t = static_cast<TierLevel>(l);
    if (tier(t) != nullptr && !resident(global, t)) write(global, t, ready);
  }
  return ready;
}

bool NodeStore::write(FactId global, TierLevel t, SimTime now, FactId node_id) {
  StoreTier* s = tier(t);
  if (s == nullptr) return false;
  const bool remote = t == TierLevel::kRemote;
  const FactId id = remote ? remote_->id_of(global) : node_id != kNoId ? node_id : id_of(global);
  if (s->resident(id)) return true;
  const std::uint64_t bytes = moved_bytes(facts_.tokens(global).tokens);
  // A tier's writes only write further down: one list of victims a tier is enough.
  std::vector<FactId>& evicted = evicted_[static_cast<int>(t)];
  evicted.clear();
  const bool kept = s->insert(entry(*s, global, id), now, &evicted);
  TierFlow& f = flow(t);
  const WritePolicy policy = config(t).write;
  const TierLevel next = below(t);
  // Room made (even for a fact then refused): the victims go down by the tier's write policy.
  for (const FactId v : evicted) {
    const FactId vg = remote ? remote_->global_of(v) : global_of(v);
    if (t == TierLevel::kHost) host_evicted_.push_back(vg);
    // Demoted unless the tier writes through (its copy went below when it came) or not at all.
    // A warm start's drops are not counted, as its writes (its share depends on how much of
    // the population it was given).
    if (policy == WritePolicy::kBack && next != TierLevel::kGpu) {
      if (demote(vg, t, now, remote ? kNoId : v) == Demotion::kDropped && !warming_) ++f.drops;
    } else if ((policy == WritePolicy::kNone || next == TierLevel::kGpu) && !warming_) {
      ++f.drops;
    }
  }
  if (!kept) return false;
  if (!warming_) {
    f.bytes_in += bytes;
    ++f.writes;
    if (t == TierLevel::kDisk) disk_write_.transfer(bytes, now);
    if (remote) net_out_.transfer(bytes, now);
  }
  if (policy == WritePolicy::kThrough && next != TierLevel::kGpu) {
    write(global, next, now, remote || next == TierLevel::kRemote ? kNoId : id);
  }
  return true;
}

NodeStore::Demotion NodeStore::demote(FactId global, TierLevel t, SimTime now, FactId node_id) {
  for (TierLevel b = below(t); b != TierLevel::kGpu; b = below(b)) {
    const FactId id = b == TierLevel::kRemote ? kNoId : node_id;
    if (id != kNoId ? tier(b)->resident(id) : resident(global, b)) return Demotion::kHeld;
    if (write(global, b, now, id)) return Demotion::kWritten;
  }
  return Demotion::kDropped;
}

void NodeStore::count_load(TierLevel t, std::uint64_t bytes, SimTime issued, SimTime ready) {
  TierFlow& f = flow(t);
  ++f.loads;
  f.bytes_out += bytes;
  f.load_wait_ns += ready - issued;
}

bool NodeStore::View::pinned(FactId id) const {
  if (node->shared_) return node->shared_->pinned(id);
  const FactId g = node->globals_[id];
  for (const Replica* r : replicas) {
    if (r->pinned_global(g)) return true;
  }
  return false;
}

std::uint64_t NodeStore::View::unpin_count() const {
  // Pins only grow while the sum stays: each replica's count rises whenever a pin drops.
  std::uint64_t n = 0;
  for (const Replica* r : replicas) n += r->unpin_count();
  return n;
}

bool NodeStore::View::user_in_flight(UserId user) const {
  for (const Replica* r : replicas) {
    if (r->user_in_flight(user)) return true;
  }
  return false;
}

SimTime NodeStore::View::user_last_active(UserId user) const {
  SimTime t = kNever;
  for (const Replica* r : replicas) {
    const SimTime a = r->user_last_active(user);
    if (a != kNever) t = t == kNever ? a : std::max(t, a);
  }
  return t;
}

std::int64_t NodeStore::View::next_access(FactId id) const {
  if (!node->next_access_) return kNever;
  return node->next_access_(node->global_of(id), position());
}

FactId NodeStore::View::fact_id_bound() const {
  return node->shared_ ? node->shared_->local_id_bound() : node->globals_.size();
}

std::int64_t NodeStore::View::position() const {
  return acting != nullptr ? acting->position() : 0;
}

}  // namespace inferscale
