#include "sim/replica.h"

#include <algorithm>
#include <array>
#include <span>

#include "policies/registry.h"
#include "sim/batch_scheduler.h"
#include "traces/error.h"

namespace inferscale {

Replica::Replica(int index, const RunConfig& cfg, FactTable& facts, RequestPool& pool,
                 Executor& executor, NextAccessFn next_access, NodeStore* node)
    : index_(index),
      cfg_(cfg),
      facts_(facts),
      pool_(pool),
      executor_(executor),
      next_access_(std::move(next_access)),
      kv_inject_(cfg.serving.mode == ServingMode::kKvInject),
      async_loads_(kv_inject_ && ((cfg.store.host.enabled && cfg.store.host.async_loads) ||
                                  cfg.store.disk.enabled || cfg.store.remote.enabled)),
      host_async_(cfg.store.host.async_loads),
      kv_bytes_per_token_(cfg.kv_bytes_per_token_per_gpu()),
      fact_kv_bytes_per_token_(cfg.fact_kv_bytes_per_token_per_gpu()) {
  if (kv_inject_) {
    const std::uint64_t seed = cfg.seed * 1000003ull + static_cast<std::uint64_t>(index);
    gpu_ = make_store_tier("gpu", cfg.store.gpu, seed, cfg.fast_paths);
    gpu_->set_view(this, true);
    node_ = cfg.lower_tiers() ? node : nullptr;
    INFERSCALE_ASSERT(node_ != nullptr || !cfg.lower_tiers(), "tiers below the GPU without a node");
    // The node's tiers number facts themselves: only the GPU tier's policy sees local ids.
    global_ids_ = gpu_->slot_ids();
    lite_entries_ = !gpu_->reads_entry_details();
    direct_ = gpu_->direct() && !node_ && global_ids_;
  }
  total_blocks_ = cfg.request_kv_bytes() / (kv_bytes_per_token_ * kBlockTokens);
  if (cfg.serving.header_cache) {
    const auto header_blocks = blocks_of(cfg.serving.header_tokens);
    total_blocks_ = total_blocks_ > header_blocks ? total_blocks_ - header_blocks : 0;
  }
  free_blocks_ = total_blocks_;
  scheduler_ =
      SchedulerRegistry::make(cfg.scheduler.name, cfg.scheduler.params, cfg.scheduler.where);
}

bool Replica::user_in_flight(UserId user) const {
  const UserState* u = users_.find(user);
  return u != nullptr && u->in_flight > 0;
}

SimTime Replica::user_last_active(UserId user) const {
  const UserState* u = users_.find(user);
  return u == nullptr ? kNever : u->last_active;
}

void Replica::enqueue(std::uint32_t ri, SimTime now) {
  Request& r = pool_[ri];
  r.replica = index_;
  auto& u = users_[r.user];
  ++u.in_flight;
  u.last_active = now;
  waiting_.push_back(ri);
}

bool Replica::has_work() const {
  return !waiting_.empty() || !running_.empty() || !request_jobs_.empty() || !write_jobs_.empty();
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
  const std::uint64_t blocks = blocks_of(own + 1);
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
  // The next requests in line are likely admitted after this one, and on a busy replica their
  // records have long left the cache: each admission starts loading the record of the third in
  // line and the fact list of the second (whose record the admission before loaded), so that
  // an admission's reads of its facts' token records do not wait on them first. (A loop of
  // prefetches of the next request's facts' records, here before, had been deleted by the
  // compiler: prefetches alone are no side effects. Kept with an empty volatile asm, it made
  // no difference on one replica and a fleet 2 % slower.)
  if (waiting_.front() == ri) {
    const std::size_t queued = waiting_.size();
    if (queued > 3) {
      const char* rec = reinterpret_cast<const char*>(&pool_[waiting_[3]]);
      for (std::size_t b = 0; b < sizeof(Request); b += 64) __builtin_prefetch(rec + b);
    }
    if (queued > 2) {
      const auto& facts = pool_[waiting_[2]].facts;
      const char* list = reinterpret_cast<const char*>(facts.data());
      const std::size_t bytes = facts.size() * sizeof(facts[0]);
      for (std::size_t b = 0; b < bytes; b += 64) __builtin_prefetch(list + b);
    }
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

/// The replica's planning calls as its scheduler sees them, for one step.
class Replica::Steps final : public StepBuilder {
 public:
  Steps(Replica& replica, SimTime now)
      : r_(replica), now_(now), budget_(replica.cfg_.scheduler.max_batch_tokens) {}

  std::uint32_t budget() const override { return budget_; }
  bool plan_decodes() override { return r_.plan_decodes(budget_); }
  void plan_request_encodes() override { r_.plan_request_encodes(now_, budget_); }
  void plan_prefills() override { r_.plan_prefills(now_, budget_); }
  void admit_waiting() override { r_.admit_waiting(now_, budget_); }
  void plan_memory_writes() override { r_.plan_memory_writes(now_, budget_); }
  bool can_admit() const override { return r_.can_admit(budget_); }
  std::size_t waiting() const override { return r_.waiting_.size(); }
  RequestId waiting_id(std::size_t position) const override {
    return r_.pool_[r_.waiting_[position]].id;
  }
  std::uint32_t waiting_misses(std::size_t position) const override {
    return r_.gpu_misses(r_.waiting_[position]);
  }
  bool admit_waiting_at(std::size_t position) override {
    return r_.admit_waiting_at(position, now_, budget_);
  }

 private:
  Replica& r_;
  SimTime now_;
  std::uint32_t budget_;
};

SimTime Replica::start_step(SimTime now) {
  INFERSCALE_ASSERT(!busy_, "step started on a busy replica");
  begin_step(now);
  Steps steps(*this, now);
  scheduler_->plan_step(steps);
  return execute_step(now);
}

void Replica::begin_step(SimTime now) {
  // Between steps no request holds an unpinned fact's local id that it reads before
  // plan_encode renumbers it (see sweep_local_facts).
  if (taken_since_sweep_ >= sweep_after_) sweep_local_facts();
  plan_.clear();
  host_evicted_bits_.fill(0);
  items_.clear();
  plan_.replica = index_;
  plan_.now = now;
  plan_.released.swap(to_release_);
  to_release_.clear();
  preempted_this_step_ = false;
  step_tokens_ = 0;
}

bool Replica::plan_decodes(std::uint32_t& budget) {
  // Every request this loop does not reach is preempted, or the budget is spent: when it saw
  // none still in its prefill, plan_prefills has nothing to do.
  // The decodes are counted locally and charged to the budget after the loop: the member
  // counters would be stored back at every decode (a Request's fields may alias them).
  const std::uint32_t limit = budget;
  bool prefilling = false;
  std::uint32_t decodes = 0;
  for (std::size_t i = 0; i < running_.size() && decodes < limit; ++i) {
    const std::uint32_t ri = running_[i];
    Request& r = pool_[ri];
    if (!r.prefill_done()) {
      prefilling = true;
      continue;
    }
    const std::uint64_t own_after = std::uint64_t(r.context) + 1 - r.shared_tokens;
    if (blocks_of(own_after) > r.kv_blocks) {
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
    ++decodes;
  }
  budget = limit - decodes;
  step_tokens_ += decodes;
  return prefilling;
}

void Replica::plan_request_encodes(SimTime now, std::uint32_t& budget) {
  while (!request_jobs_.empty() && plan_encode_job(request_jobs_.front(), now, budget)) {
    request_jobs_.pop_front();
  }
}

void Replica::plan_prefills(SimTime now, std::uint32_t& budget) {
  for (std::size_t i = 0; i < running_.size() && budget > 0; ++i) {
    const Request& r = pool_[running_[i]];
    if (r.prefill_done() || r.pending_encodes > 0 || loads_pending(r, now)) continue;
    if (!r.injected || r.computed_done < r.computed_total) plan_prefill_chunk(running_[i], budget);
  }
}

void Replica::admit_waiting(SimTime now, std::uint32_t& budget) {
  while (can_admit(budget)) {
    if (!admit(waiting_.front(), now, budget)) break;
    waiting_.pop_front();
  }
}

bool Replica::admit_waiting_at(std::size_t position, SimTime now, std::uint32_t& budget) {
  INFERSCALE_ASSERT(position < waiting_.size(), "no waiting request at this position");
  if (!admit(waiting_[position], now, budget)) return false;
  waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(position));
  return true;
}

std::uint32_t Replica::gpu_misses(std::uint32_t ri) const {
  const Request& r = pool_[ri];
  if (!gpu_) return static_cast<std::uint32_t>(r.facts.size());
  std::uint32_t misses = 0;
  for (const FactId g : r.facts) {
    if (global_ids_) {
      misses += gpu_->resident(g) ? 0 : 1;
    } else if (compact_ids_) {
      const std::uint32_t l = local_map_.find(g);
      misses += l != 0 && gpu_->resident(l - 1) ? 0 : 1;
    } else {
      const bool seen = g < local_plus1_.size() && local_plus1_[g] != 0;
      misses += seen && gpu_->resident(local_plus1_[g] - 1) ? 0 : 1;
    }
  }
  return misses;
}

void Replica::plan_memory_writes(SimTime now, std::uint32_t& budget) {
  while (!write_jobs_.empty() && budget > 0 && plan_encode_job(write_jobs_.front(), now, budget)) {
    write_jobs_.pop_front();
  }
}

SimTime Replica::execute_step(SimTime now) {
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
  // Admission failed or was not tried if every running request decodes (an admitted one does
  // not yet); it fails again while no record arrives (see steady_).
  steady_ = plan_.decodes.size() == running_.size() && plan_.prefills.empty() &&
            plan_.encodes.empty() && plan_.loads.empty() && plan_.async_loads.empty() &&
            plan_.offloads.empty() && plan_.async_offloads.empty() && plan_.evictions.empty() &&
            plan_.host_evictions.empty() && step_pins_.empty() && request_jobs_.empty() &&
            write_jobs_.empty() && !preempted_this_step_ && !async_loads_;

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

std::uint32_t Replica::run_decodes(SimTime& now, SimTime bound, std::vector<SimTime>& starts,
                                   SimTime& d) {
  if (!steady_) return 0;
  // Step j after the one in flight (j = 0) decodes every request at its context + j and would
  // finish one when j + 1 reaches the fewest tokens any still has to generate.
  const auto n = static_cast<std::uint32_t>(running_.size());
  std::uint64_t context_sum = 0;
  std::uint32_t to_generate = 0xffffffffu;
  for (const std::uint32_t ri : running_) {
    const Request& r = pool_[ri];
    context_sum += r.context;
    to_generate = std::min(to_generate, r.output_tokens - r.generated);
    // start_step adds one block at a step: new_blocks below counts on no request lacking more.
    if (blocks_of(std::uint64_t(r.context) + 1 - r.shared_tokens) > r.kv_blocks) return 0;
  }
  // Blocks the requests hold once step j has started (one more each time a request's KV crosses
  // a block; it holds enough for its context + 1 already, so never more than one at a step).
  auto new_blocks = [&](std::uint32_t j) {
    std::uint64_t sum = 0;
    for (const std::uint32_t ri : running_) {
      const Request& r = pool_[ri];
      const std::uint64_t need = blocks_of(std::uint64_t(r.context) + j + 1 - r.shared_tokens);
      if (need > r.kv_blocks) sum += need - r.kv_blocks;
    }
    return sum;
  };
  // The last step that may start here: it finishes a request, or the one after it would find
  // no free block for a request that needs one (start_step preempts then).
  std::uint32_t last = to_generate - 1;
  if (last == 0) return 0;
  if (new_blocks(last) > free_blocks_) {
    std::uint32_t lo = 0;  // new_blocks(lo) fits
    while (lo + 1 < last) {
      const std::uint32_t mid = lo + (last - lo) / 2;
      (new_blocks(mid) <= free_blocks_ ? lo : last) = mid;
    }
    last = lo;
    if (last == 0) return 0;
  }
  const std::uint64_t store_bytes = last_step_.store_bytes;  // no step here stores anything
  std::uint32_t j = 0;
  SimTime next = now, t = now;  // the next step's start, the last started one's
  // Priced a few steps at a time: most runs end at the bound after a few steps.
  std::array<SimTime, 16> prices;
  std::uint32_t priced = 0, used = 0;
  while (j < last) {
    if (used == priced) {
      priced = std::min<std::uint32_t>(j == 0 ? 4 : prices.size(), last - j);
      used = 0;
      if (!executor_.price_decodes(n, context_sum + std::uint64_t(j + 1) * n,
                                   std::span(prices.data(), priced))) {
        break;
      }
    }
    ++j;
    t = next;
    d = std::max<SimTime>(prices[used++], 1);
    starts.push_back(t);
    ++stats_.steps;
    stats_.busy_ns += d;
    stats_.store_bytes_time_integral += double(store_bytes) * double(d);
    next = t + d;
    if (next >= bound) break;  // not fused: the caller queues its end
  }
  if (j == 0) return 0;
  now = t;
  // The state start_step leaves for step j: j more tokens each, their blocks, its plan.
  for (std::uint32_t i = 0; i < n; ++i) {
    Request& r = pool_[running_[i]];
    r.context += j;
    r.generated += j;
    const std::uint64_t need = blocks_of(std::uint64_t(r.context) + 1 - r.shared_tokens);
    if (need > r.kv_blocks) {
      free_blocks_ -= need - r.kv_blocks;
      r.kv_blocks = static_cast<std::uint32_t>(need);
    }
    plan_.decodes[i].context_tokens = r.context;
  }
  plan_.now = t;
  plan_.released.clear();
  last_step_.start = t;
  last_step_.duration_ns = d;
  last_step_.kv_blocks_used = total_blocks_ - free_blocks_;
  // The phases go to a timeline only, and steps are fused only without one.
  last_step_.phases = PhaseTimes{};
  INFERSCALE_ASSERT(std::max<SimTime>(executor_.execute(plan_).duration_ns, 1) == d,
                    "price_decodes disagrees with execute");
  stats_.max_kv_blocks_used = std::max(stats_.max_kv_blocks_used, last_step_.kv_blocks_used);
  return j;
}

void Replica::finish_step(SimTime now, std::vector<std::uint32_t>& finished) {
  busy_ = false;
  for (const FactId l : step_pins_) unpin(l);
  step_pins_.clear();
  for (const StepItem& item : items_) {
    Request& r = pool_[item.request];
    if (item.decode) {
      r.context += 1;
      if (++r.generated < r.output_tokens) continue;
    } else {
      r.computed_done += item.tokens;
      r.context += item.tokens;
      if (!item.last_chunk) continue;
      if (r.first_token < 0) r.first_token = now;
      if (++r.generated < r.output_tokens) continue;
    }
    r.finish = now;
    release_request(item.request);
    finished.push_back(item.request);
  }
  items_.clear();
}

}  // namespace inferscale
