#include "sim/replica.h"

#include <algorithm>

#include "policies/registry.h"
#include "traces/error.h"

namespace inferscale {

namespace {

std::unique_ptr<StoreTier> make_tier(const char* name, const TierConfig& t, std::uint64_t seed) {
  PolicyArgs ev{t.eviction_params, t.capacity_bytes, seed};
  PolicyArgs ad{t.admission_params, t.capacity_bytes, seed ^ 0x9e3779b97f4a7c15ull};
  auto eviction = PolicyRegistry::make_eviction(t.eviction, ev, t.eviction_where);
  auto admission = PolicyRegistry::make_admission(t.admission, ad, t.admission_where);
  return std::make_unique<StoreTier>(name, t.capacity_bytes, std::move(eviction),
                                     std::move(admission), t.eviction);
}

}  // namespace

Replica::Replica(int index, const RunConfig& cfg, FactTable& facts, RequestPool& pool,
                 Executor& executor, NextAccessFn next_access)
    : index_(index),
      cfg_(cfg),
      facts_(facts),
      pool_(pool),
      executor_(executor),
      next_access_(std::move(next_access)),
      kv_inject_(cfg.serving.mode == ServingMode::kKvInject),
      async_loads_(kv_inject_ && cfg.store.host.enabled && cfg.store.host.async_loads),
      kv_bytes_per_token_(cfg.model.kv_bytes_per_token()) {
  if (kv_inject_) {
    const std::uint64_t seed = cfg.seed * 1000003ull + static_cast<std::uint64_t>(index);
    gpu_ = make_tier("gpu", cfg.store.gpu, seed);
    gpu_->set_view(this, true);
    if (cfg.store.host.enabled) {
      host_ = make_tier("host", cfg.store.host, seed + 17);
      host_->set_view(this, true);
    }
    global_ids_ = gpu_->slot_ids() && (!host_ || host_->slot_ids());
    lite_entries_ = !gpu_->reads_entry_details() && (!host_ || !host_->reads_entry_details());
    direct_ = gpu_->direct() && !host_ && global_ids_;
  }
  total_blocks_ = cfg.request_kv_bytes() / (kv_bytes_per_token_ * kBlockTokens);
  if (cfg.serving.header_cache) {
    const auto header_blocks = blocks_for(cfg.serving.header_tokens);
    total_blocks_ = total_blocks_ > header_blocks ? total_blocks_ - header_blocks : 0;
  }
  free_blocks_ = total_blocks_;
}

FactId Replica::add_local(FactId global) {
  if (global >= local_plus1_.size()) {
    local_plus1_.resize(std::max<std::size_t>(global + 1, local_plus1_.size() * 2), 0);
  }
  local_.push_back(LocalFact{static_cast<std::uint32_t>(global), 0});
  if (host_) host_dropped_step_.push_back(0);
  if (async_loads_) async_ready_.push_back(0);
  local_plus1_[global] = static_cast<std::uint32_t>(local_.size());
  return local_plus1_[global] - 1;
}

void Replica::add_global(FactId global) {
  const std::size_t n = std::max<std::size_t>(global + 1, pins_.size() * 2);
  pins_.resize(n, 0);
  if (host_) host_dropped_step_.resize(n, 0);
  if (async_loads_) async_ready_.resize(n, 0);
}

bool Replica::user_in_flight(UserId user) const {
  const UserState* u = users_.find(user);
  return u != nullptr && u->in_flight > 0;
}

SimTime Replica::user_last_active(UserId user) const {
  const UserState* u = users_.find(user);
  return u == nullptr ? kNever : u->last_active;
}

std::int64_t Replica::next_access(FactId local) const {
  return next_access_ ? next_access_(global_of(local), position_) : kNever;
}

void Replica::enqueue(std::uint32_t ri, SimTime now) {
  Request& r = pool_[ri];
  r.replica = index_;
  auto& u = users_[r.user];
  ++u.in_flight;
  u.last_active = now;
  waiting_.push_back(ri);
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
  warm_.push_back(global);
  evicted_.clear();
  const bool placed = gpu_->insert(entry(global, local, 0), 0, &evicted_);
  if (!host_) return;
  // What the GPU tier does not keep goes to the host tier, as it would have over time.
  std::vector<FactId> dropped;
  for (const FactId v : evicted_) {
    if (!host_->resident(v)) host_->insert(entry(global_of(v), v, 0), 0, &dropped);
  }
  if (!placed && !host_->resident(local)) host_->insert(entry(global, local, 0), 0, &dropped);
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
  const std::uint64_t pool_blocks = gpu_->capacity_bytes() / (kBlockTokens * kv_bytes_per_token_);
  auto send = [&](bool host_only) {
    std::uint32_t tokens = 0;
    std::uint64_t blocks = 0;
    for (const FactId g : warm_) {
      const FactId l = local_id(g);
      const bool on_gpu = gpu_->resident(l);
      const bool on_host = host_ && host_->resident(l);
      if (host_only ? (on_gpu || !on_host) : !on_gpu) continue;
      const FactInfo& f = facts_[g];
      if (tokens + f.tokens > cfg_.scheduler.max_batch_tokens ||
          (host_only && blocks + blocks_for(f.tokens) > pool_blocks)) {
        flush(host_only);
        tokens = 0;
        blocks = 0;
      }
      plan_.encodes.push_back(FactEncode{g, f.user, f.tokens, 0, true, kNoRequest, 0});
      tokens += f.tokens;
      blocks += blocks_for(f.tokens);
    }
    flush(host_only);
  };
  plan_.clear();
  send(true);   // host tier first, through the (still empty) GPU pool
  send(false);  // then what the GPU tier holds
  warm_.clear();
  warm_.shrink_to_fit();
}

bool Replica::has_work() const {
  return !waiting_.empty() || !running_.empty() || !request_jobs_.empty() || !write_jobs_.empty();
}

void Replica::pin(Request& r, RequestFact& f) {
  if (f.pinned) return;
  add_pin(f.local);
  f.pinned = true;
  r.pins.push_back(static_cast<std::uint32_t>(f.local));
}

void Replica::unpin_all(Request& r) {
  // The facts' records are far apart: start every miss before the first count waits on one.
  // The pins' list, not the layout: a request released long after its admission finds its
  // layout out of the cache, eight times the lines. The layout's flags stay set on release (the
  // request is done); preempt clears them.
  for (const std::uint32_t l : r.pins) {
    __builtin_prefetch(&pin_count(l), 1);
    gpu_->prefetch_pin(l);
  }
  for (const std::uint32_t l : r.pins) {
    INFERSCALE_ASSERT(pin_count(l) > 0, "pin count underflow");
    unpin(l);
  }
  r.pins.clear();
}

bool Replica::insert_gpu(FactId global, SimTime now, bool use_admission, Request* owner,
                         RequestFact* f) {
  const FactId local = local_id(global);
  if (f != nullptr && f->pinned) owner = nullptr;
  if (direct_) {
    // Admits everything: insert and force_insert agree. Inserted as pinned, since it is pinned
    // at once below: the tier's count of unpinned facts and the slot's flag end as add_pin
    // leaves them.
    const bool ok = gpu_->insert_direct(local, fact_store_bytes(facts_.tokens(global).tokens), true,
                                        plan_.evictions);
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
  evicted_.clear();
  const CacheEntry e = entry(global, local, now);
  const bool ok =
      use_admission ? gpu_->insert(e, now, &evicted_) : gpu_->force_insert(e, now, &evicted_);
  for (const FactId v : evicted_) {
    const FactId vg = global_of(v);  // not the victim's record with global ids
    plan_.evictions.push_back(vg);
    if (host_ && !host_->resident(v)) {
      const CacheEntry ve = entry(vg, v, now);
      host_evicted_.clear();
      if (host_->insert(ve, now, &host_evicted_)) {
        // The executor offloads before it drops host copies: a fact dropped from the host tier
        // earlier in this step and offloaded again now must stay.
        if (host_dropped_step_[v] == stats_.steps + 1) {
          auto& hev = plan_.host_evictions;
          hev.erase(std::remove(hev.begin(), hev.end(), vg), hev.end());
        }
        const FactLoad offload{vg, ve.tokens, move_bytes(ve.tokens), kNoRequest, 0};
        if (async_copy_) {
          // On the device-to-host copy engine; a load into the blocks it frees waits for it.
          d2h_free_at_ = std::max(d2h_free_at_, now) + load_cost_(offload.bytes);
          plan_.async_offloads.push_back(offload);
        } else {
          plan_.offloads.push_back(offload);
        }
        ++stats_.offloads;
      }
      for (const FactId h : host_evicted_) {
        plan_.host_evictions.push_back(global_of(h));
        host_dropped_step_[h] = stats_.steps + 1;  // this step's plan (steps counts executed ones)
      }
    }
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

/// Host-tier hit: copy into the GPU pool (or straight into the request's cache when the pool has
/// no unpinned room).
void Replica::promote_from_host(Request& r, RequestFact& f, SimTime now, bool async) {
  const FactTokens& info = facts_.tokens(f.global);
  const std::uint64_t bytes = move_bytes(info.tokens);
  async_copy_ = async;  // the victims' offloads go to the other copy engine
  const bool placed = insert_gpu(f.global, now, false);
  async_copy_ = false;
  if (placed) {
    const FactLoad load{f.global, info.tokens, bytes, kNoRequest, 0};
    if (async) {
      // The host-to-device copy engine runs the loads one after another, in the order they
      // were issued, each after the offloads issued before it (its blocks may be theirs).
      INFERSCALE_ASSERT(load_cost_, "asynchronous loads without a load price");
      copy_free_at_ = std::max({copy_free_at_, now, d2h_free_at_}) + load_cost_(bytes);
      r.loads_ready = std::max(r.loads_ready, copy_free_at_);
      async_ready_[f.local] = copy_free_at_;
      plan_.async_loads.push_back(load);
    } else {
      plan_.loads.push_back(load);
    }
    pin(r, f);
  } else {
    plan_.loads.push_back(
        FactLoad{f.global, info.tokens, bytes, r.id, f.position, r.prompt_tokens});
    f.private_kv = true;
  }
  ++stats_.loads;
}

void Replica::resolve_facts(std::uint32_t ri, SimTime now, std::uint32_t& budget) {
  Request& r = pool_[ri];
  const auto& s = cfg_.serving;
  const bool first_admission = r.preemptions == 0;
  const std::uint32_t shared = s.header_cache ? s.header_tokens : 0;
  std::uint32_t pos = s.header_tokens;
  std::uint32_t computed = s.footer_tokens + r.query_tokens + (s.header_tokens - shared);
  std::uint32_t present = shared;
  INFERSCALE_ASSERT(r.pins.empty(), "a request admitted with pins held");
  if (r.layout.capacity() == 0 && !spare_layouts_.empty()) {
    r.layout.swap(spare_layouts_.back());
    spare_layouts_.pop_back();
  }
  if (r.pins.capacity() == 0 && !spare_pins_.empty()) {
    r.pins.swap(spare_pins_.back());
    spare_pins_.pop_back();
  }
  r.layout.clear();
  r.layout.reserve(r.facts.size());
  r.loads_ready = 0;
  // The facts' records are far apart: start every miss before the loop waits on the first.
  for (const FactId g : r.facts) prefetch_fact(g);
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
      if (direct_ ? gpu_->lookup_direct(f.local, fact_store_bytes(f.tokens))
                  : gpu_->lookup(entry(g, f.local, now), now)) {
        f.source = FactSource::kGpuHit;
        if (async_loads_) r.loads_ready = std::max(r.loads_ready, async_ready_[f.local]);
        if (first_admission) ++r.gpu_hits;
      } else if (host_ && host_->lookup(entry(g, f.local, now), now)) {
        f.source = FactSource::kHostHit;
        if (first_admission) ++r.host_hits;
      } else {
        if (first_admission) ++r.misses;
        f.source = s.miss_path == MissPath::kEncode ? FactSource::kEncoded : FactSource::kText;
      }
    }
    if (f.source == FactSource::kText) {
      computed += f.tokens;
    } else {
      present += f.tokens;
    }
  }
  r.prompt_tokens = pos + s.footer_tokens + r.query_tokens;  // per-request loads name it
  // Then pins (the layout vector no longer moves): every GPU hit before any load, since a load
  // may evict to make room and must not take a fact this request is about to inject.
  for (RequestFact& f : r.layout) {
    if (f.source == FactSource::kGpuHit) pin(r, f);
  }
  // Then loads and encode jobs. Without a host tier there are no loads, so planning an encode
  // before queueing the next changes no order.
  bool plan_now = direct_ && request_jobs_.empty();
  for (std::uint32_t i = 0; i < r.layout.size(); ++i) {
    RequestFact& f = r.layout[i];
    if (f.source == FactSource::kHostHit) {
      promote_from_host(r, f, now, async_loads_);
    } else if (f.source == FactSource::kEncoded) {
      const EncodeJob job{f.global, ri, r.id, i};
      ++r.pending_encodes;
      if (plan_now && plan_encode_direct(r, f, budget)) continue;
      plan_now = false;
      request_jobs_.push_back(job);
    }
  }
  // After a preemption the tokens generated so far are recomputed too (vLLM's recompute).
  r.computed_total = computed + r.generated;
  r.computed_done = 0;
  r.present_base = present;
  r.shared_tokens = shared;
  r.context = 0;
  r.injected = false;
  if (first_admission) r.prefill_tokens = computed;
}

bool Replica::plan_encode_job(const EncodeJob& job, SimTime now, std::uint32_t& budget) {
  const FactId local = local_id(job.global);
  Request* r = job.request != kNone ? &pool_[job.request] : nullptr;
  RequestFact* f = r != nullptr ? &r->layout[job.fact_index] : nullptr;
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
  if (host_ && f != nullptr && host_->resident(local)) {
    promote_from_host(*r, *f, now);
    return done();
  }
  const std::uint32_t tokens = encode_tokens(job.global);
  if (tokens > cfg_.scheduler.max_batch_tokens) encode_too_large(job.global, tokens);
  if (tokens > budget) return false;
  // Pinned for the request if stored: it holds the fact past the step's end.
  const bool stored = insert_gpu(job.global, now, true, r, f);
  const FactTokens& info = facts_.tokens(job.global);
  if (r == nullptr && !stored) return true;  // a memory write the store did not admit
  budget -= tokens;
  // Written in place: a copy from the stack would wait for the insertion's stores to random
  // cache lines to drain (a wide load of narrow stores is not forwarded).
  FactEncode& enc = plan_.encodes.emplace_back();
  enc.fact = job.global;
  enc.user = r != nullptr ? r->user : facts_[job.global].user;  // a request names its user's facts
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

bool Replica::plan_encode_direct(Request& r, RequestFact& f, std::uint32_t& budget) {
  const FactId local = f.local;  // the global id
  if (gpu_->resident(local)) {   // named twice by the request: placed for its first mention
    pin(r, f);
    --r.pending_encodes;
    return true;
  }
  const FactTokens& info = facts_.tokens(f.global);
  const std::uint32_t tokens = info.tokens + info.encode_context_tokens;
  if (tokens > cfg_.scheduler.max_batch_tokens) encode_too_large(f.global, tokens);
  if (tokens > budget) return false;
  const bool stored =
      gpu_->insert_direct(local, fact_store_bytes(info.tokens), true, plan_.evictions);
  budget -= tokens;
  FactEncode& enc = plan_.encodes.emplace_back();
  enc.fact = f.global;
  enc.user = r.user;
  enc.tokens = info.tokens;
  enc.context_tokens = info.encode_context_tokens;
  enc.store = stored;
  if (stored) {  // pinned for the request (insert_gpu's direct branch)
    ++pin_count(local);
    f.pinned = true;
    r.pins.push_back(static_cast<std::uint32_t>(local));
  } else {
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

void Replica::plan_first_chunk_facts(Request& r, PrefillItem& item) {
  item.facts_begin = static_cast<std::uint32_t>(plan_.prompt_facts.size());
  for (const auto& f : r.layout) {
    plan_.prompt_facts.push_back(
        PromptFact{f.global, f.tokens, f.position, f.source != FactSource::kText, f.private_kv});
  }
  item.facts_end = static_cast<std::uint32_t>(plan_.prompt_facts.size());
}

bool Replica::plan_prefill_chunk(std::uint32_t ri, std::uint32_t& budget) {
  Request& r = pool_[ri];
  const std::uint32_t remaining = r.computed_total - r.computed_done;
  std::uint32_t n = std::min(remaining, budget);
  if (!cfg_.scheduler.chunked_prefill && n < remaining) {
    if (remaining > cfg_.scheduler.max_batch_tokens) {
      throw InputError(cfg_.trace.where,
                       "request " + std::to_string(r.id) + " computes " +
                           std::to_string(remaining) +
                           " prompt tokens, more than scheduler.max_batch_tokens with "
                           "chunked_prefill off");
    }
    return false;
  }
  if (n == 0) return false;
  PrefillItem item;
  item.request = r.id;
  item.user = r.user;
  item.header_tokens = cfg_.serving.header_tokens;
  item.footer_tokens = cfg_.serving.footer_tokens;
  item.query_tokens = r.query_tokens;
  item.prompt_tokens = r.prompt_tokens;
  item.computed_total = r.computed_total;
  item.computed_done = r.computed_done;
  item.computed_now = n;
  item.header_cached = cfg_.serving.header_cache;
  item.first_chunk = !r.injected;
  if (item.first_chunk) {
    plan_first_chunk_facts(r, item);
    r.injected = true;
    r.context = r.present_base;
  }
  item.present_tokens = r.context;
  item.last_chunk = r.computed_done + n == r.computed_total;
  plan_.prefills.push_back(item);
  items_.push_back(StepItem{ri, n, false, item.last_chunk});
  budget -= n;
  step_tokens_ += n;
  return true;
}

bool Replica::admit(std::uint32_t ri, SimTime now, std::uint32_t& budget) {
  Request& r = pool_[ri];
  const auto& s = cfg_.serving;
  position_ = r.trace_position;
  // Summed here, not at arrival: a request waits long enough on a busy replica that reading
  // its facts' records twice would miss the cache twice.
  std::uint32_t facts_tokens = 0;
  for (const FactId g : r.facts) facts_tokens += facts_.tokens(g).tokens;
  const std::uint64_t own = std::uint64_t(s.header_cache ? 0 : s.header_tokens) + facts_tokens +
                            s.footer_tokens + r.query_tokens + r.generated;
  // Blocks for the prompt and the first output token.
  const std::uint64_t blocks = blocks_for(own + 1);
  if (blocks > total_blocks_) {
    throw InputError(cfg_.trace.where,
                     "request " + std::to_string(r.id) + " needs " + std::to_string(blocks) +
                         " KV blocks, but replica memory holds only " +
                         std::to_string(total_blocks_) +
                         " (reduce the store capacity, k, or the activation reserve)");
  }
  if (blocks > free_blocks_) return false;
  free_blocks_ -= blocks;
  r.kv_blocks = static_cast<std::uint32_t>(blocks);
  r.admitted = true;
  if (r.first_scheduled < 0) r.first_scheduled = now;
  running_.push_back(ri);
  // The next request in line is likely admitted after this one: its fact records (read once at
  // arrival, long evicted on a busy replica) load while this one is planned.
  if (waiting_.size() > 1 && waiting_.front() == ri) {
    for (const FactId g : pool_[waiting_[1]].facts) prefetch_fact(g);
  }
  resolve_facts(ri, now, budget);
  while (!request_jobs_.empty() && plan_encode_job(request_jobs_.front(), now, budget)) {
    request_jobs_.pop_front();
  }
  if (r.pending_encodes == 0 && budget > 0 && !loads_pending(r, now))
    plan_prefill_chunk(ri, budget);
  return true;
}

void Replica::preempt(std::uint32_t ri) {
  Request& r = pool_[ri];
  unpin_all(r);
  for (auto& f : r.layout) f.pinned = false;
  free_blocks_ += r.kv_blocks;
  r.kv_blocks = 0;
  running_.erase(std::find(running_.begin(), running_.end(), ri));
  request_jobs_.erase(std::remove_if(request_jobs_.begin(), request_jobs_.end(),
                                     [ri](const EncodeJob& j) { return j.request == ri; }),
                      request_jobs_.end());
  r.admitted = false;
  r.injected = false;
  r.pending_encodes = 0;
  r.computed_done = 0;
  r.context = 0;
  ++r.preemptions;
  ++stats_.preemptions;
  waiting_.push_front(ri);
  // Free its KV at the end of this step; it is not re-admitted before then.
  plan_.released.push_back(r.id);
  preempted_this_step_ = true;
}

SimTime Replica::start_step(SimTime now) {
  INFERSCALE_ASSERT(!busy_, "step started on a busy replica");
  plan_.clear();
  items_.clear();
  plan_.replica = index_;
  plan_.now = now;
  plan_.released.swap(to_release_);
  to_release_.clear();
  preempted_this_step_ = false;
  step_tokens_ = 0;
  std::uint32_t budget = cfg_.scheduler.max_batch_tokens;

  // 1. One decode token per running request past its prefill; preempt on a full KV pool.
  // Every request this loop does not reach is preempted, or the budget is spent: when it saw
  // none still in its prefill, step 3 has nothing to do.
  bool prefilling = false;
  for (std::size_t i = 0; i < running_.size() && budget > 0; ++i) {
    const std::uint32_t ri = running_[i];
    Request& r = pool_[ri];
    if (!r.prefill_done()) {
      prefilling = true;
      continue;
    }
    const std::uint64_t own_after = std::uint64_t(r.context) + 1 - r.shared_tokens;
    if (blocks_for(own_after) > r.kv_blocks) {
      while (free_blocks_ == 0 && running_.back() != ri) preempt(running_.back());
      if (free_blocks_ == 0) {
        preempt(ri);
        break;
      }
      --free_blocks_;
      ++r.kv_blocks;
    }
    plan_.decodes.push_back(DecodeItem{r.id, r.context});
    items_.push_back(StepItem{ri, 0, true, false});
    --budget;
    ++step_tokens_;
  }
  // 2. Fact encodes that admitted requests wait for (FIFO).
  while (!request_jobs_.empty() && plan_encode_job(request_jobs_.front(), now, budget)) {
    request_jobs_.pop_front();
  }
  // 3. Prefill chunks of admitted requests, in admission order.
  for (std::size_t i = 0; prefilling && i < running_.size() && budget > 0; ++i) {
    const Request& r = pool_[running_[i]];
    if (r.prefill_done() || r.pending_encodes > 0 || loads_pending(r, now)) continue;
    if (!r.injected || r.computed_done < r.computed_total) plan_prefill_chunk(running_[i], budget);
  }
  // 4. Admit waiting requests, first come first served.
  while (!preempted_this_step_ && !waiting_.empty() && running_.size() < cfg_.scheduler.max_seqs &&
         budget > 0) {
    if (!admit(waiting_.front(), now, budget)) break;
    waiting_.pop_front();
  }
  // 5. Memory writes with what is left.
  while (!write_jobs_.empty() && budget > 0 && plan_encode_job(write_jobs_.front(), now, budget)) {
    write_jobs_.pop_front();
  }

  if (plan_.prefills.empty() && plan_.decodes.empty() && plan_.encodes.empty() &&
      plan_.loads.empty() && plan_.async_loads.empty()) {
    for (const FactId l : step_pins_) unpin(l);
    step_pins_.clear();
    to_release_.swap(plan_.released);
    if (!waiting_.empty() && running_.empty() && !preempted_this_step_ && request_jobs_.empty()) {
      throw InputError(cfg_.trace.where,
                       "replica " + std::to_string(index_) + " cannot admit request " +
                           std::to_string(pool_[waiting_.front()].id) + " although it is idle");
    }
    return -1;
  }
  INFERSCALE_ASSERT(step_tokens_ <= cfg_.scheduler.max_batch_tokens, "token budget exceeded");
  const BatchResult result = executor_.execute(plan_);
  const SimTime duration = std::max<SimTime>(result.duration_ns, 1);
  busy_ = true;

  // Every field assigned (no zeroing of the whole record first).
  last_step_.start = now;
  last_step_.duration_ns = duration;
  last_step_.batch_tokens = step_tokens_;
  last_step_.sequences = static_cast<std::uint32_t>(plan_.prefills.size() + plan_.decodes.size());
  last_step_.prefills = static_cast<std::uint32_t>(plan_.prefills.size());
  last_step_.decodes = static_cast<std::uint32_t>(plan_.decodes.size());
  last_step_.encodes = static_cast<std::uint32_t>(plan_.encodes.size());
  last_step_.loads = static_cast<std::uint32_t>(plan_.loads.size());
  last_step_.async_loads = static_cast<std::uint32_t>(plan_.async_loads.size());
  last_step_.kv_blocks_used = total_blocks_ - free_blocks_;
  last_step_.store_bytes = gpu_ ? gpu_->used_bytes() : 0;
  last_step_.phases = result.phases;
  ++stats_.steps;
  stats_.busy_ns += duration;
  stats_.max_batch_tokens_seen =
      std::max<std::uint64_t>(stats_.max_batch_tokens_seen, step_tokens_);
  stats_.max_kv_blocks_used = std::max(stats_.max_kv_blocks_used, last_step_.kv_blocks_used);
  stats_.store_bytes_time_integral += double(last_step_.store_bytes) * double(duration);
  return duration;
}

SimTime Replica::wake_time() const {
  SimTime t = kNever;
  if (!async_loads_) return t;
  for (const std::uint32_t ri : running_) {
    const Request& r = pool_[ri];
    if (!r.injected && r.pending_encodes == 0 && r.loads_ready > 0) t = std::min(t, r.loads_ready);
  }
  return t;
}

void Replica::release_request(std::uint32_t ri) {
  Request& r = pool_[ri];
  unpin_all(r);
  spare_layouts_.push_back(std::move(r.layout));  // done with: nothing reads them after release
  spare_pins_.push_back(std::move(r.pins));
  r.layout.clear();  // (a moved-from vector is empty; said for the reader)
  r.pins.clear();
  free_blocks_ += r.kv_blocks;
  r.kv_blocks = 0;
  running_.erase(std::find(running_.begin(), running_.end(), ri));
  to_release_.push_back(r.id);
  UserState* u = users_.find(r.user);
  if (u != nullptr && u->in_flight > 0) --u->in_flight;
}

bool Replica::step_finishes_request() const {
  for (const StepItem& item : items_) {
    if (item.decode || item.last_chunk) {
      const Request& r = pool_[item.request];
      if (r.generated + 1 >= r.output_tokens) return true;
    }
  }
  return false;
}

void Replica::finish_step(SimTime now, std::vector<std::uint32_t>& finished) {
  busy_ = false;
  for (const FactId l : step_pins_) unpin(l);
  step_pins_.clear();
  for (const StepItem& item : items_) {
    Request& r = pool_[item.request];
    bool produced = false;
    if (item.decode) {
      r.context += 1;
      r.generated += 1;
      produced = true;
    } else {
      r.computed_done += item.tokens;
      r.context += item.tokens;
      if (item.last_chunk) {
        r.generated += 1;
        if (r.first_token < 0) r.first_token = now;
        produced = true;
      }
    }
    if (produced && r.generated >= r.output_tokens) {
      r.finish = now;
      release_request(item.request);
      finished.push_back(item.request);
    }
  }
  items_.clear();
}

}  // namespace inferscale
