// Replica: its facts. Local and global ids, warm stores, pins, placement in the GPU tier (with
// its evictions written down to the node's tiers), and the encode jobs of misses and memory
// writes. Hits below the GPU are in replica_tiers.cpp; the scheduling side (admission, chunked
// prefill, preemption, steps) is in replica.cpp.
#include <algorithm>

#include "sim/replica.h"
#include "traces/error.h"

namespace inferscale {

namespace {

/// A request's buffer from the spares when it has none (its capacity is kept for the next).
template <typename V>
void reuse_spare(V& v, std::vector<V>& spares) {
  if (v.capacity() == 0 && !spares.empty()) {
    v.swap(spares.back());
    spares.pop_back();
  }
}

/// A request's prompt while its facts are resolved: whether this is its first admission (not
/// after a preemption), the cached header's tokens, the position of the next fact, the tokens
/// to compute (footer, query, the header unless cached, facts inlined as text) and present
/// (the cached header, facts injected).
struct ResolveTally {
  bool first_admission;
  std::uint32_t shared, pos, computed, present;
};

/// The start of resolving `r`, which holds no pins: its layout emptied (and its pins' and
/// layout's buffers taken from the spares when it has none), no load awaited yet.
ResolveTally begin_resolve(const ServingConfig& s, Request& r,
                           std::vector<std::vector<RequestFact>>& spare_layouts,
                           std::vector<std::vector<std::uint32_t>>& spare_pins) {
  INFERSCALE_ASSERT(r.pins.empty(), "a request admitted with pins held");
  reuse_spare(r.layout, spare_layouts);
  reuse_spare(r.pins, spare_pins);
  r.layout.clear();
  r.loads_ready = 0;
  const std::uint32_t shared = s.header_cache ? s.header_tokens : 0;
  return {r.preemptions == 0, shared, s.header_tokens,
          s.footer_tokens + r.query_tokens + (s.header_tokens - shared), shared};
}

/// The end of resolving `r`: its prefill from the tally. After a preemption the tokens
/// generated so far are recomputed too (vLLM's recompute).
void finish_resolve(Request& r, const ResolveTally& t) {
  r.computed_total = t.computed + r.generated;
  r.computed_done = 0;
  r.present_base = t.present;
  r.shared_tokens = t.shared;
  r.context = 0;
  r.injected = false;
  if (t.first_admission) r.prefill_tokens = t.computed;
}

}  // namespace

void Replica::set_compact_ids() {
  compact_ids_ = true;
  global_ids_ = false;
  direct_ = false;
  users_.set_sparse_only();
  // Renumbering is invisible only to policies that see slots, never fact ids.
  // (The node's tiers keep their own ids: a local record may go while they hold the fact.)
  free_locals_ = kv_inject_ && gpu_ && gpu_->forgets_removed();
}

void Replica::sweep_local_facts() {
  taken_since_sweep_ = 0;
  if (!free_locals_) return;
  // Descending, so that the lowest freed id is taken first.
  for (std::size_t l = local_.size(); l-- > 0;) {
    LocalFact& f = local_[l];
    if (f.global == kFreeLocal || f.pins != 0 || gpu_->resident(l) ||
        (node_ids_ && node_->holds(l))) {
      continue;
    }
    f.global = kFreeLocal;
    if (async_loads_) async_ready_[l] = 0;
    free_local_.push_back(static_cast<std::uint32_t>(l));
    ++local_facts_freed_;
  }
  local_map_.rebuild(
      local_.size(), [this](std::size_t l) { return local_[l].global; }, kFreeLocal);
  sweep_after_ = std::max(kMinSweep, local_facts());
}

FactId Replica::add_compact_local(FactId global, const FactIdMap::Probe& p) {
  ++taken_since_sweep_;
  if (!free_local_.empty()) {
    const std::uint32_t l = free_local_.back();
    free_local_.pop_back();
    local_[l] = LocalFact{static_cast<std::uint32_t>(global), 0};
    local_map_.insert_at(p, global, l + 1);
    return l;
  }
  local_.push_back(LocalFact{static_cast<std::uint32_t>(global), 0});
  if (async_loads_) async_ready_.push_back(0);
  local_map_.insert_at(p, global, static_cast<std::uint32_t>(local_.size()));
  return local_.size() - 1;
}

FactId Replica::add_local(FactId global) {
  if (global >= local_plus1_.size()) {
    local_plus1_.resize(std::max<std::size_t>(global + 1, local_plus1_.size() * 2), 0);
  }
  local_.push_back(LocalFact{static_cast<std::uint32_t>(global), 0});
  if (async_loads_) async_ready_.push_back(0);
  local_plus1_[global] = static_cast<std::uint32_t>(local_.size());
  return local_plus1_[global] - 1;
}

void Replica::add_global(FactId global) {
  const std::size_t n = std::max<std::size_t>(global + 1, pins_.size() * 2);
  pins_.resize(n, 0);
  if (direct_) gpu_->reserve_ids(n);  // its unchecked calls take any local id
  if (async_loads_) async_ready_.resize(n, 0);
}

bool Replica::pinned_global(FactId global) const {
  if (global_ids_) return global < pins_.size() && pins_[global] > 0;
  if (compact_ids_) {
    const std::uint32_t l = local_map_.find(global);
    return l != 0 && local_[l - 1].pins > 0;
  }
  return global < local_plus1_.size() && local_plus1_[global] != 0 &&
         local_[local_plus1_[global] - 1].pins > 0;
}

std::int64_t Replica::next_access(FactId local) const {
  return next_access_ ? next_access_(global_of(local), position_) : kNever;
}

void Replica::memory_write(FactId global, SimTime) {
  if (!kv_inject_) return;
  local_id(global);
  write_jobs_.push_back(EncodeJob{global, kNone, 0, 0});
}

void Replica::warm_insert(FactId global) {
  if (!kv_inject_) return;
  const FactId local = local_id(global);
  if (gpu_->resident(local)) return;
  warmed_ = true;
  evicted_.clear();
  if (direct_) {  // insert() on a direct tier, nothing pinned yet
    gpu_->insert_direct(local, fact_store_bytes(facts_.tokens(global).tokens), false, evicted_,
                        unpins_);
    return;
  }
  const bool placed = gpu_->insert(entry(global, local, 0), 0, &evicted_);
  if (node_) {
    // What the GPU tier does not keep goes down as it would have over time (free of cost).
    node_->set_acting(this);
    node_->set_warming(true);
    for (const FactId v : evicted_) {
      if (cfg_.store.gpu.write == WritePolicy::kBack)
        node_->demote(global_of(v), TierLevel::kGpu, 0);
    }
    if (!placed || cfg_.store.gpu.write == WritePolicy::kThrough) {
      node_->demote(global, TierLevel::kGpu, 0);
    }
    node_->set_warming(false);
    node_->host_evicted().clear();  // before the clock starts: nothing for an executor to drop
    // As during a run: the ids of the facts the node's tiers passed on are freed, or a warm
    // start would hold one for every fact it demoted.
    node_->sweep_ids_if_due();
  }
  // Nothing is pinned before the first request: the records of the warm facts that did not
  // stay are freed as they go, so that a warm start holds what the tiers hold.
  if (taken_since_sweep_ >= sweep_after_) sweep_local_facts();
}

void Replica::preload() {
  if (!kv_inject_) return;
  // Encodes in forwards of at most max_batch_tokens; `then` runs after each forward (offloads).
  auto flush = [&](bool offload) {
    if (plan_.encodes.empty()) return;
    executor_.execute(plan_);
    if (offload) {
      BatchPlan move;
      for (const auto& e : plan_.encodes) {
        move.offloads.push_back(FactLoad{e.fact, e.tokens, move_bytes(e.tokens), kNoRequest, 0});
        move.evictions.push_back(e.fact);
      }
      executor_.execute(move);
    }
    plan_.clear();
  };
  // Host-tier facts pass through the empty GPU pool: a forward's facts must also fit its blocks.
  const std::uint64_t pool_blocks =
      gpu_->capacity_bytes() / (kBlockTokens * fact_kv_bytes_per_token_);
  auto send = [&](bool host_only) {
    std::uint32_t tokens = 0;
    std::uint64_t blocks = 0;
    // The warm facts still resident are the facts the tiers hold: in the order they were
    // inserted (local ids follow first sight; with global ids, declaration), unless a sweep
    // renumbered them.
    const std::size_t bound = global_ids_ ? std::min(pins_.size(), facts_.size()) : local_.size();
    for (FactId l = 0; l < bound; ++l) {
      if (!global_ids_ && local_[l].global == kFreeLocal) continue;
      const FactId g = global_of(l);
      const bool on_gpu = gpu_->resident(l);
      const bool on_host = node_ && node_->resident(g, TierLevel::kHost);
      if (host_only ? (on_gpu || !on_host) : !on_gpu) continue;
      const FactInfo f = facts_[g];
      if (tokens + f.tokens > cfg_.scheduler.max_batch_tokens ||
          (host_only && blocks + blocks_of(f.tokens) > pool_blocks)) {
        flush(host_only);
        tokens = 0;
        blocks = 0;
      }
      plan_.encodes.push_back(FactEncode{g, f.user, f.tokens, 0, true, kNoRequest, 0});
      tokens += f.tokens;
      blocks += blocks_of(f.tokens);
    }
    flush(host_only);
  };
  if (!warmed_) return;
  plan_.clear();
  send(true);   // host tier first, through the (still empty) GPU pool
  send(false);  // then what the GPU tier holds
  warmed_ = false;
}

void Replica::pin(Request& r, RequestFact& f) {
  if (f.pinned) return;
  add_pin(f.local);
  f.pinned = true;
  r.pins.push_back(static_cast<std::uint32_t>(f.local));
}

void Replica::unpin_all(Request& r) {
  if (direct_) {  // the same steps, without the checks a direct replica's ids do not need
    for (const std::uint32_t l : r.pins) {
      __builtin_prefetch(pins_.data() + l, 1);
      gpu_->prefetch_pin_direct(l);
    }
    for (const std::uint32_t l : r.pins) gpu_->prefetch_pin_slot_direct(l);
    for (const std::uint32_t l : r.pins) {
      INFERSCALE_ASSERT(pins_[l] > 0, "pin count underflow");
      if (--pins_[l] != 0) continue;
      ++unpins_;
      gpu_->unpin_direct(l);
    }
    r.pins.clear();
    return;
  }
  // The facts' records are far apart: start every miss before the first count waits on one.
  // The pins' list, not the layout: a request released long after its admission finds its
  // layout out of the cache, eight times the lines. The layout's flags stay set on release (the
  // request is done); preempt clears them.
  for (const std::uint32_t l : r.pins) {
    __builtin_prefetch(&pin_count(l), 1);
    gpu_->prefetch_pin(l);
  }
  // Then the slot records those name (only the first read of a slot id waits).
  for (const std::uint32_t l : r.pins) gpu_->prefetch_pin_slot(l);
  for (const std::uint32_t l : r.pins) {
    INFERSCALE_ASSERT(pin_count(l) > 0, "pin count underflow");
    unpin(l);
  }
  r.pins.clear();
}

bool Replica::insert_gpu_tiers(FactId global, FactId local, SimTime now, bool use_admission,
                               Request* owner, RequestFact* f) {
  if (f != nullptr && f->pinned) owner = nullptr;
  evicted_.clear();
  const CacheEntry e = entry(global, local, now);
  const bool ok =
      use_admission ? gpu_->insert(e, now, &evicted_) : gpu_->force_insert(e, now, &evicted_);
  for (const FactId v : evicted_) {
    const FactId vg = global_of(v);  // not the victim's record with global ids
    plan_.evictions.push_back(vg);
    if (!node_) continue;
    if (cfg_.store.gpu.write != WritePolicy::kBack) {
      if (cfg_.store.gpu.write == WritePolicy::kNone) ++node_->flow(TierLevel::kGpu).drops;
      continue;
    }
    node_->set_acting(this);
    const NodeStore::Demotion d =
        node_->demote(vg, TierLevel::kGpu, now, node_ids_ ? v : NodeStore::kNoId);
    if (d == NodeStore::Demotion::kWritten) {
      // The executor offloads before it drops host copies: a fact dropped from the host tier
      // earlier in this step (the plan lists it) and offloaded again now must stay.
      auto& hev = plan_.host_evictions;
      if (maybe_host_evicted(vg)) hev.erase(std::remove(hev.begin(), hev.end(), vg), hev.end());
      // Into host memory first, whichever tier keeps it. Written in place (as plan_encode's
      // encodes): a copy from the stack would wait for its narrow stores to drain.
      const std::uint32_t tokens = facts_.tokens(vg).tokens;
      FactLoad& offload = (async_copy_ ? plan_.async_offloads : plan_.offloads).emplace_back();
      offload.fact = vg;
      offload.tokens = tokens;
      offload.bytes = move_bytes(tokens);
      // On the device-to-host copy engine; a load into the blocks it frees waits for it.
      if (async_copy_) d2h_free_at_ = std::max(d2h_free_at_, now) + load_cost_(offload.bytes);
      node_->flow(TierLevel::kGpu).bytes_out += offload.bytes;
      ++stats_.offloads;
    } else if (d == NodeStore::Demotion::kDropped) {
      ++node_->flow(TierLevel::kGpu).drops;
    }
    take_host_evictions();
  }
  if (ok && owner != nullptr) {
    pin(*owner, *f);
  } else if (ok) {
    // Pinned until the step ends: a fact placed in this step must not be evicted by a later
    // insertion of the same step (the executor frees before it encodes).
    add_pin(local);
    step_pins_.push_back(local);
  }
  return ok;
}

void Replica::prefetch_victims(int stage, std::uint32_t n) {
  if (node_ != nullptr) node_->prefetch_host_victims(stage, n);
  StoreTier::VictimWalk& w = gpu_walk_;
  if (stage == 0) {
    gpu_->start_victim_walk(w, n);
    gpu_->finish_victim_walk(w);
    return;
  }
  for (std::uint32_t i = 0; i < w.n; ++i) {
    const FactId local = gpu_->walked_fact(w, i);
    if (local >= local_bound()) continue;
    if (stage == 1) {
      if (!global_ids_) __builtin_prefetch(local_.data() + local);
      continue;
    }
    const FactId global = global_of(local);
    if (global == kFreeLocal) continue;
    facts_.prefetch_tokens(global);
    if (node_ != nullptr) node_->prefetch(global);
  }
}

void Replica::resolve_facts(std::uint32_t ri, SimTime now, std::uint32_t& budget) {
  if (direct_) {
    resolve_facts_direct(ri, budget);
    return;
  }
  Request& r = pool_[ri];
  const auto& s = cfg_.serving;
  auto [first_admission, shared, pos, computed, present] =
      begin_resolve(s, r, spare_layouts_, spare_pins_);
  r.layout.reserve(r.facts.size());
  std::uint32_t gpu_hits = 0, host_hits = 0, disk_hits = 0, remote_hits = 0, misses = 0;
  const FactSource miss_source =
      s.miss_path == MissPath::kEncode ? FactSource::kEncoded : FactSource::kText;
  if (kv_inject_) {
    // The facts' records in the replica's and the node's maps are far apart: every first miss
    // starts before the loop below waits on one.
    for (const FactId g : r.facts) prefetch_records(g);
    prefetch_victims(0, static_cast<std::uint32_t>(r.facts.size()));
  }
  for (const FactId g : r.facts) {
    RequestFact& f = r.layout.emplace_back();  // in place, as in plan_encode_job
    f.global = static_cast<std::uint32_t>(g);
    f.tokens = facts_.tokens(g).tokens;
    f.position = pos;
    pos += f.tokens;
    if (!kv_inject_) {
      f.source = FactSource::kText;
    } else {
      f.local = static_cast<std::uint32_t>(local_id(g));
      __builtin_prefetch(&pin_count(f.local));  // pinned or placed below
      if (gpu_->lookup(entry(g, f.local, now), now)) {
        f.source = FactSource::kGpuHit;
        if (async_loads_) r.loads_ready = std::max(r.loads_ready, async_ready_[f.local]);
        ++gpu_hits;
      } else if (node_ != nullptr && lower_hit(g, f, now)) {
        if (f.source == FactSource::kHostHit) ++host_hits;
        if (f.source == FactSource::kDiskHit) ++disk_hits;
        if (f.source == FactSource::kRemoteHit) ++remote_hits;
      } else {
        ++misses;
        f.source = miss_source;
      }
    }
    if (f.source == FactSource::kText) {
      computed += f.tokens;
    } else {
      present += f.tokens;
    }
  }
  r.prompt_tokens = pos + s.footer_tokens + r.query_tokens;  // per-request loads name it
  if (kv_inject_) prefetch_victims(1);
  if (first_admission) {
    r.gpu_hits += gpu_hits;
    r.host_hits += host_hits;
    r.disk_hits += disk_hits;
    r.remote_hits += remote_hits;
    r.misses += misses;
  }
  // Then pins (the layout vector no longer moves): every GPU hit before any load, since a load
  // may evict to make room and must not take a fact this request is about to inject.
  for (RequestFact& f : r.layout) {
    if (f.source == FactSource::kGpuHit) pin(r, f);
  }
  // And its disk and remote hits until the step ends: the loads before one must not evict it
  // from the tier it is read from (the node's tiers skip what its replicas pin). A host hit
  // needs none: the executor drops host copies after the step's loads.
  if (node_ != nullptr) {
    for (RequestFact& f : r.layout) {
      if (f.source == FactSource::kDiskHit || f.source == FactSource::kRemoteHit) {
        add_pin(f.local);
        step_pins_.push_back(f.local);
      }
    }
  }
  if (kv_inject_) prefetch_victims(2);
  // Then loads, then the misses' encodes: planned here while no job waits before them (as
  // admit would plan their jobs at once), queued from the first that does not fit.
  if (node_ != nullptr) {
    for (RequestFact& f : r.layout) {
      if (f.source == FactSource::kHostHit || f.source == FactSource::kDiskHit ||
          f.source == FactSource::kRemoteHit) {
        promote_from_lower(r, f, now);
      }
    }
  }
  bool plan_now = request_jobs_.empty();
  for (std::uint32_t i = 0; i < r.layout.size(); ++i) {
    RequestFact& f = r.layout[i];
    if (f.source != FactSource::kEncoded) continue;
    ++r.pending_encodes;
    if (plan_now && plan_encode(f.global, &r, &f, now, budget, true)) continue;
    plan_now = false;
    request_jobs_.push_back(EncodeJob{f.global, ri, r.id, i});
  }
  finish_resolve(r, {first_admission, shared, pos, computed, present});
}

void Replica::resolve_facts_direct(std::uint32_t ri, std::uint32_t& budget) {
  Request& r = pool_[ri];
  const auto& s = cfg_.serving;
  auto [first_admission, shared, pos, computed, present] =
      begin_resolve(s, r, spare_layouts_, spare_pins_);
  // Sized at once (the value-initialisation is one pass) and written through a pointer: an
  // emplace_back per fact reloads and checks the vector's ends.
  r.layout.resize(r.facts.size());
  r.pins.reserve(r.facts.size());
  // Every fact's records (pins, the tier's) are valid below the table's size: no check per fact.
  if (facts_.size() > pins_.size()) add_global(facts_.size() - 1);
  const bool encode = s.miss_path == MissPath::kEncode;
  const FactSource miss_source = encode ? FactSource::kEncoded : FactSource::kText;
  // The victims of this request's misses, expected as many as the last request's, walked one
  // step a fact below (the misses are placed on a full store, evicting from the LRU tail).
  StoreTier::VictimWalk walk;
  gpu_->start_victim_walk(walk, last_encodes_ + last_encodes_ / 4 + 2);
  std::uint64_t lookup_bytes = 0, hit_bytes = 0;
  std::uint32_t hits = 0, misses = 0;
  RequestFact* f_out = r.layout.data();
  for (const FactId g : r.facts) {
    const std::uint32_t tokens = facts_.tokens(g).tokens;
    RequestFact& f = *f_out++;
    f.global = static_cast<std::uint32_t>(g);
    f.local = static_cast<std::uint32_t>(g);
    f.tokens = tokens;
    f.position = pos;
    pos += tokens;
    gpu_->step_victim_walk(walk);
    const std::uint64_t bytes = fact_store_bytes(tokens);
    lookup_bytes += bytes;
    const std::uint32_t slot = gpu_->hit_slot(g);
    if (slot != StoreTier::kNoSlot) {
      f.source = FactSource::kGpuHit;
      ++hits;
      hit_bytes += bytes;
      present += tokens;
      // pin(r, f) of a hit: lookups read no pins, so pinning each hit as it is found pins them
      // all before any placement, in the same order, as resolve_facts does.
      if (pins_[g]++ == 0) gpu_->pin_slot(slot);
      f.pinned = true;
      r.pins.push_back(static_cast<std::uint32_t>(g));
    } else {
      ++misses;
      f.source = miss_source;
      if (encode) {
        present += tokens;
        __builtin_prefetch(pins_.data() + g);  // placed below
      } else {
        computed += tokens;
      }
    }
  }
  gpu_->count_lookups(r.facts.size(), lookup_bytes, hits, hit_bytes);
  r.prompt_tokens = pos + s.footer_tokens + r.query_tokens;
  if (first_admission) {
    r.gpu_hits += hits;
    r.misses += misses;
  }
  const std::uint32_t encodes = encode ? misses : 0;
  walk.steps = std::min(encodes + encodes / 4 + 1, StoreTier::VictimWalk::kMax);
  gpu_->finish_victim_walk(walk);
  last_encodes_ = encodes;
  bool plan_now = request_jobs_.empty();
  const auto n = static_cast<std::uint32_t>(encodes > 0 ? r.facts.size() : 0);
  RequestFact* const layout = r.layout.data();
  // Room for an encode per miss, value-initialised at once and written through a pointer (as
  // the layout), then cut to the encodes planned.
  const std::size_t planned_before = plan_.encodes.size();
  if (plan_now && n > 0) plan_.encodes.resize(planned_before + encodes);
  FactEncode* enc_out = plan_.encodes.data() + planned_before;
  for (std::uint32_t i = 0; i < n; ++i) {
    RequestFact& f = layout[i];
    if (f.source != FactSource::kEncoded) continue;
    ++r.pending_encodes;
    if (plan_now && plan_encode_direct(r, f, budget, enc_out)) continue;
    plan_now = false;
    request_jobs_.push_back(EncodeJob{f.global, ri, r.id, i});
  }
  plan_.encodes.resize(static_cast<std::size_t>(enc_out - plan_.encodes.data()));
  finish_resolve(r, {first_admission, shared, pos, computed, present});
}

bool Replica::plan_encode_job(const EncodeJob& job, SimTime now, std::uint32_t& budget) {
  Request* r = job.request != kNone ? &pool_[job.request] : nullptr;
  return plan_encode(job.global, r, r != nullptr ? &r->layout[job.fact_index] : nullptr, now,
                     budget);
}

bool Replica::plan_encode(FactId global, Request* r, RequestFact* f, SimTime now,
                          std::uint32_t& budget, bool fresh) {
  // A sweep between the request's admission and this step may have renumbered the fact.
  const FactId local = fresh ? f->local : local_id(global);
  if (f != nullptr) f->local = static_cast<std::uint32_t>(local);
  auto done = [&] {
    if (r != nullptr) --r->pending_encodes;
    return true;
  };
  if (gpu_->resident(local)) {  // placed meanwhile by another job or a memory write
    if (f != nullptr) pin(*r, *f);
    if (r != nullptr && async_loads_)
      r->loads_ready = std::max(r->loads_ready, async_ready_[local]);
    return done();
  }
  if (node_ && f != nullptr && !fresh) {
    // Written below meanwhile (by a memory write or an eviction): loaded, not encoded again.
    const TierLevel t = node_->highest(global);
    if (t != TierLevel::kGpu) {
      f->source = t == TierLevel::kHost   ? FactSource::kHostHit
                  : t == TierLevel::kDisk ? FactSource::kDiskHit
                                          : FactSource::kRemoteHit;
      promote_from_lower(*r, *f, now, true);
      f->source = FactSource::kEncoded;  // counted as the miss it was at admission
      return done();
    }
  }
  const std::uint32_t tokens = encode_tokens(global);
  if (tokens > cfg_.scheduler.max_batch_tokens) encode_too_large(global, tokens);
  if (tokens > budget) return false;
  // Pinned for the request if stored: it holds the fact past the step's end.
  const bool stored = insert_gpu(global, local, now, true, r, f);
  if (stored) write_through(global, now);
  const FactTokens& info = facts_.tokens(global);
  if (r == nullptr && !stored) return true;  // a memory write the store did not admit
  budget -= tokens;
  // Written in place: a copy from the stack would wait for the insertion's stores to random
  // cache lines to drain (a wide load of narrow stores is not forwarded).
  FactEncode& enc = plan_.encodes.emplace_back();
  enc.fact = global;
  enc.user = r != nullptr ? r->user : facts_.user(global);  // a request names its user's facts
  enc.tokens = info.tokens;
  enc.context_tokens = info.encode_context_tokens;
  enc.store = stored;
  if (f != nullptr) {
    if (!stored) {  // (stored: insert_gpu pinned it)
      enc.for_request = r->id;
      enc.position = f->position;
      enc.prompt_tokens = r->prompt_tokens;
      f->private_kv = true;
      ++stats_.private_encodes;
    }
  } else {
    ++stats_.memory_write_encodes;
  }
  ++stats_.encodes;
  stats_.encode_tokens += tokens;
  step_tokens_ += tokens;
  return done();
}

void Replica::encode_too_large(FactId global, std::uint32_t tokens) const {
  throw InputError(cfg_.trace.where, "fact " + std::to_string(facts_.external(global)) + " needs " +
                                         std::to_string(tokens) +
                                         " tokens to encode (with cwe_window " +
                                         std::to_string(cfg_.serving.cwe_window) +
                                         "), more than scheduler.max_batch_tokens (" +
                                         std::to_string(cfg_.scheduler.max_batch_tokens) + ")");
}

}  // namespace inferscale
