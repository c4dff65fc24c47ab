// GpuExecutor: request state, the order of a step, and the one batched forward pass.
#include "executor/gpu/gpu_executor.h"
#include "executor/copy_order.h"
#include "executor/gpu/host_trace.h"
#include "executor/gpu/torch_compat.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <unordered_set>

namespace inferscale {

namespace {

at::ScalarType torch_dtype(DType t) {
  switch (t) {
    case DType::kF32:
      return at::kFloat;
    case DType::kBF16:
      return at::kBFloat16;
    case DType::kF16:
      return at::kHalf;
  }
  return at::kFloat;
}

}  // namespace

GpuExecutor::GpuExecutor(GpuExecutorOptions options)
    : options_(std::move(options)), rows_(std::int32_t(options_.kv_cache_tokens)) {
  c10::InferenceMode guard;
  compat::install_warning_handler();
  HostTrace trace("host setup:");
  // Traced, each part's device work is waited for, so that its point counts it.
  auto traced = [&](const char* point) {
    if (trace.on()) ops_->clock().synchronize();
    trace.at(point);
  };
  if (options_.device == "cuda") {
    ops_ = make_cuda_ops();
  } else if (options_.device == "cpu") {
    ops_ = make_cpu_ops();
  } else {
    throw std::invalid_argument("GpuExecutor: device must be cuda or cpu, got " + options_.device);
  }
  ops_->set_split_kv(options_.split_kv);
  ops_->set_cuda_graphs(options_.cuda_graphs);
  ops_->set_blas(options_.blas);
  if (options_.copy_inflight_mb == 0) {
    throw std::invalid_argument("GpuExecutor: copy_inflight_mb must be at least 1");
  }
  ops_->set_copy_inflight_bytes(std::size_t(options_.copy_inflight_mb) << 20);
  if (options_.device == "cuda") {
    use_programmatic_launch(options_.programmatic_launch);
  }
  traced("ops");
  const ModelConfig& m = options_.model;
  tokens_ = options_.tokens ? options_.tokens
                            : std::make_shared<SyntheticTokenSource>(m.vocab, options_.seed);
  auto loader =
      options_.weights ? options_.weights : std::make_shared<RandomWeightLoader>(options_.seed);
  const auto opts = at::TensorOptions().dtype(torch_dtype(options_.dtype)).device(ops_->device());
  const std::int32_t rope_rows =
      options_.rope_positions > 0 ? options_.rope_positions
                                  : std::int32_t(std::min<std::uint32_t>(m.max_positions, 32768));
  model_ = std::make_unique<LlamaModel>(m, loader->load(m, opts), *ops_,
                                        opts.dtype().toScalarType(), rope_rows);
  traced("weights");
  pool_ = std::make_unique<FactPool>(m, options_.pool_bytes, options_.reserved_pool_tokens, opts);
  traced("pool");
  host_tier_ = std::make_unique<HostTier>(*pool_);
  host_tier_->reserve(options_.host_bytes);
  traced("host_tier");
  // The tier's fact map and the offload tickets' map sized for a fact per tier block up front:
  // grown by stores instead, they rehashed in the middle of a step's offloads (at 200 users,
  // 2.3 ms of host time in the first step after the first wave on the H200).
  host_tier_->reserve_entries();
  host_write_ticket_.reserve(host_tier_->block_count());
  traced("maps");
  cache_ = model_->make_cache(std::int32_t(options_.kv_cache_tokens));
  traced("cache");
  trace.note("pool_mb=" + std::to_string(options_.pool_bytes >> 20) +
             " host_mb=" + std::to_string(options_.host_bytes >> 20) +
             " cache_tokens=" + std::to_string(options_.kv_cache_tokens));
  // No pass has more than max_batch_tokens tokens (encodes are cut to it): warmed up to there,
  // none needs padding.
  padding_ =
      RowPadding::of_executor(options_.warm_rows, options_.max_batch_tokens, options_.row_bucket);
  if (padding_.above > 0) pad_rows_start_ = alloc_rows(std::int32_t(padding_.bucket) - 1);
}

void GpuExecutor::pad(ForwardBatch& batch) const {
  const auto rows = padding_.rows(std::uint64_t(batch.tokens()));
  if (rows > 0) batch.pad(std::int32_t(rows), pad_rows_start_);
}

GpuExecutor::~GpuExecutor() {
  // Copies still in flight read or write the pool and the host tier, which go first.
  if (ops_) ops_->drain_copies();
}

std::string GpuExecutor::name() const {
  return "gpu(" + ops_->device_name() + ", " + options_.model.name + ")";
}

void GpuExecutor::check_position(std::int64_t position) const {
  if (position >= model_->rope_positions()) {
    throw std::invalid_argument("position " + std::to_string(position) +
                                " is outside the rotary table (" +
                                std::to_string(model_->rope_positions()) + " rows)");
  }
}

std::int32_t GpuExecutor::alloc_rows(std::int32_t rows) {
  const std::int32_t start = rows_.allocate(rows);
  if (start < 0) {
    throw std::runtime_error("KV cache full: " + std::to_string(rows) +
                             " rows needed, largest "
                             "free range " +
                             std::to_string(rows_.largest_free()) + " of " +
                             std::to_string(rows_.rows()));
  }
  return start;
}

GpuExecutor::RequestState& GpuExecutor::new_request(RequestId request,
                                                    std::uint32_t prompt_tokens) {
  RequestState s;
  s.capacity = std::int32_t(prompt_tokens + options_.decode_reserve_tokens);
  s.region_start = alloc_rows(s.capacity);
  s.prompt_tokens = prompt_tokens;
  return requests_[request] = s;
}

GpuExecutor::RequestState& GpuExecutor::start_request(const PrefillItem& item) {
  const auto it = requests_.find(item.request);
  if (it == requests_.end()) return new_request(item.request, item.prompt_tokens);
  RequestState& s = it->second;
  if (!s.awaiting_first_chunk || s.prompt_tokens != item.prompt_tokens) {
    throw std::invalid_argument("plan: request " + std::to_string(item.request) +
                                " starts (first_chunk) but is already running");
  }
  s.awaiting_first_chunk = false;
  return s;
}

GpuExecutor::RequestState& GpuExecutor::private_target(RequestId request,
                                                       std::uint32_t prompt_tokens) {
  const auto it = requests_.find(request);
  if (it != requests_.end()) return it->second;
  if (prompt_tokens == 0) {
    throw std::invalid_argument("plan: KV for request " + std::to_string(request) +
                                ", which is not running, names no prompt_tokens");
  }
  RequestState& s = new_request(request, prompt_tokens);
  s.awaiting_first_chunk = true;
  return s;
}

GpuExecutor::RequestState& GpuExecutor::state(RequestId request) {
  const auto it = requests_.find(request);
  if (it == requests_.end()) {
    throw std::invalid_argument("plan: request " + std::to_string(request) + " is not running");
  }
  return it->second;
}

void GpuExecutor::grow_region(RequestState& s, std::uint32_t rows) {
  const std::int32_t capacity = std::max<std::int32_t>(
      std::int32_t(rows), s.capacity + std::int32_t(options_.decode_reserve_tokens));
  const std::int32_t start = alloc_rows(capacity);
  const std::int64_t used = s.next_position;
  cache_.k.narrow(1, start, used).copy_(cache_.k.narrow(1, s.region_start, used));
  cache_.v.narrow(1, start, used).copy_(cache_.v.narrow(1, s.region_start, used));
  rows_.free(s.region_start, s.capacity);
  s.region_start = start;
  s.capacity = capacity;
}

std::vector<std::int32_t> GpuExecutor::piece_tokens(const PromptPiece& piece, RequestId request) {
  switch (piece.kind) {
    case PromptPiece::Kind::kHeader:
      return tokens_->header(piece.tokens);
    case PromptPiece::Kind::kFact:
      return tokens_->fact(piece.fact, piece.tokens);
    case PromptPiece::Kind::kFooter:
      return tokens_->footer(piece.tokens);
    case PromptPiece::Kind::kQuery:
      return tokens_->query(request, piece.tokens);
  }
  return {};
}

BatchResult GpuExecutor::execute(const BatchPlan& plan) {
  c10::InferenceMode guard;
  StepClock& clock = ops_->clock();
  if (!settled_ && !plan.prefills.empty()) {
    settled_ = true;
    settle_device();
  }
  clock.reset();
  stats_ = StepStats{};
  const AttentionCounts calls_before = ops_->attention_counts();
  const std::uint64_t replays_before = ops_->graph_replays();
  const int m_start = clock.mark();
  HostTrace trace;
  offload_parts_ = OffloadIssueParts{trace.on()};

  // Requests starting now own their cache rows before loads and encodes write into them.
  for (const PrefillItem& p : plan.prefills) {
    if (p.first_chunk) start_request(p);
  }

  // Offloads, evictions, loads, host evictions, encodes: the documented order. A host eviction
  // of a fact this step neither offloads nor loads runs first, so that the offloads reuse its
  // blocks (the host tier is page-locked up front; growing it inside a step stalls the device).
  std::vector<FactId> late_host_evictions;
  if (!plan.host_evictions.empty()) {
    std::unordered_set<FactId> touched;
    for (const FactLoad& o : plan.offloads) touched.insert(o.fact);
    for (const FactLoad& o : plan.async_offloads) touched.insert(o.fact);
    for (const FactLoad& l : plan.loads) touched.insert(l.fact);
    for (const FactLoad& l : plan.async_loads) touched.insert(l.fact);
    for (FactId f : plan.host_evictions) {
      if (touched.count(f) > 0) {
        late_host_evictions.push_back(f);
      } else {
        settle(f);  // an asynchronous load may still read its host blocks
        host_tier_->erase(f);
      }
    }
  }
  trace.at("host_evictions");
  for (const FactLoad& o : plan.offloads) offload(o.fact);
  trace.at("sync_offloads");
  // The asynchronous offloads, the evictions, the loads and the asynchronous loads. `fallback`
  // receives the encodes of loads whose KV the host tier does not hold.
  auto issue_copies = [&](Injections& into, std::vector<PendingEncode>& fallback) {
    // The host's time issuing asynchronous copies (GpuExecutor::copy_issue).
    std::chrono::steady_clock::duration issue_time{};
    auto timed_issue = [&issue_time](auto&& issue) {
      const auto t0 = std::chrono::steady_clock::now();
      issue();
      issue_time += std::chrono::steady_clock::now() - t0;
    };
    if (!plan.async_offloads.empty()) {
      timed_issue([&] { issue_async_offloads(plan.async_offloads); });
    }
    trace.at("async_offloads");
    // The pool hands out the blocks freed last first (its free list is a stack). With
    // asynchronous copies a load waits for the offload that frees its blocks: free in reverse,
    // so that the first loads take the blocks of the first offloads and wait only for those.
    auto evict = [&](FactId f) {
      settle(f);
      pool_->free(f);
    };
    if (plan.async_loads.empty()) {
      for (FactId f : plan.evictions) evict(f);
    } else {
      for (auto f = plan.evictions.rbegin(); f != plan.evictions.rend(); ++f) evict(*f);
    }
    trace.at("evictions");
    if (!plan.loads.empty()) settle_offloads();  // they may write blocks an offload still reads
    for (const FactLoad& l : plan.loads) load(l, into, fallback);
    if (!plan.async_loads.empty()) {
      timed_issue([&] { issue_async_loads(plan.async_loads, into, fallback); });
    }
    copy_issue_.ns += std::chrono::duration_cast<std::chrono::nanoseconds>(issue_time).count();
    copy_issue_.copies += plan.async_offloads.size() + plan.async_loads.size();
    trace.at("loads");
  };
  // When the forward pass needs none of them (copies_follow_forward), the copies are issued
  // after its launch, following the compute work issued before this point: the device runs the
  // pass while the host issues them (thousands in a population's first step).
  const bool copies_after_forward = options_.copies_beside_pass && copies_follow_forward(plan);
  Injections inj;
  std::vector<PendingEncode> encodes;
  // The held point is let go once the copies are issued, or when the step fails before.
  struct HeldPoint {
    DeviceOps* ops = nullptr;
    void release() {
      if (ops != nullptr) ops->release_copy_point();
      ops = nullptr;
    }
    ~HeldPoint() { release(); }
  } held;
  if (copies_after_forward) {
    ops_->hold_copy_point();
    held.ops = ops_.get();
  } else {
    issue_copies(inj, encodes);
  }
  // A prefill that injects an asynchronously loaded fact waits for its copy here.
  if (!pending_loads_.empty()) {
    std::uint64_t need = 0;
    for (const PrefillItem& p : plan.prefills) {
      if (!p.first_chunk) continue;
      for (std::uint32_t i = p.facts_begin; i < p.facts_end && i < plan.prompt_facts.size(); ++i) {
        const auto it = pending_loads_.find(plan.prompt_facts[i].fact);
        if (it == pending_loads_.end()) continue;
        need = std::max(need, it->second);
      }
    }
    if (need > 0) {
      ops_->wait_copies(need);
      std::erase_if(pending_loads_, [need](const auto& kv) { return kv.second <= need; });
    }
  }
  const int m_load = clock.mark();
  trace.at("load_wait");
  // Host evictions of facts this step's copies touch, once those are issued.
  auto evict_late_from_host = [&] {
    for (FactId f : late_host_evictions) {
      settle(f);
      host_tier_->erase(f);
    }
  };
  if (!copies_after_forward) evict_late_from_host();
  for (const PrefillItem& p : plan.prefills) {
    if (p.first_chunk && p.header_cached && p.header_tokens > 0)
      ensure_header(p.header_tokens, inj);
  }
  for (const FactEncode& e : plan.encodes) {
    encodes.push_back(
        {e.fact, e.tokens, e.context_tokens, e.store, e.for_request, e.position, e.prompt_tokens});
  }
  if (!encodes.empty()) settle_offloads();
  run_encodes(encodes, inj);
  const int m_encode = clock.mark();
  trace.at("encodes");

  // First chunks: the cached header and the injected facts, one fused launch for the step.
  for (const PrefillItem& p : plan.prefills) {
    RequestState& s = state(p.request);
    if (p.first_chunk || p.facts_begin != p.facts_end || s.layout.empty()) {
      s.layout = compose_prompt(p, plan.prompt_facts);
    } else if (p.prompt_tokens != s.prompt_tokens) {
      throw std::invalid_argument("plan: request " + std::to_string(p.request) +
                                  ": a later chunk names " + std::to_string(p.prompt_tokens) +
                                  " prompt tokens, its first chunk " +
                                  std::to_string(s.prompt_tokens));
    }
    if (!p.first_chunk) continue;
    for (const PromptPiece& piece : s.layout) {
      if (!piece.injected) continue;
      const FactPool::Entry* e = piece.kind == PromptPiece::Kind::kHeader
                                     ? pool_->find_reserved((1ull << 62) | piece.tokens)
                                     : pool_->find(piece.fact);
      if (e == nullptr || e->tokens != piece.tokens) {
        throw std::invalid_argument("plan: request " + std::to_string(p.request) + " injects " +
                                    (piece.kind == PromptPiece::Kind::kHeader
                                         ? std::string("a header")
                                         : "fact " + std::to_string(piece.fact)) +
                                    " that the pool does not hold (with that many tokens)");
      }
      add_injection(*e, p.request, piece.position, inj);
    }
  }
  const at::Tensor inj_dev = upload_injections(inj);
  const int m_inject_begin = clock.mark();
  launch_injections(inj, inj_dev);
  const int m_inject_end = clock.mark();
  trace.at("inject");

  // One forward pass over every prefill chunk and decode item.
  ForwardBatch batch;
  std::int32_t outputs = 0;
  for (std::size_t i = 0; i < plan.prefills.size(); ++i) {
    const PrefillItem& p = plan.prefills[i];
    RequestState& s = state(p.request);
    if (p.computed_done != s.computed_done) {
      throw std::invalid_argument(
          "plan: request " + std::to_string(p.request) + " continues at computed token " +
          std::to_string(p.computed_done) + ", executor is at " + std::to_string(s.computed_done));
    }
    const auto runs = computed_runs(s.layout, p.computed_done, p.computed_done + p.computed_now);
    std::vector<std::vector<std::int32_t>> piece_ids(s.layout.size());
    for (std::size_t r = 0; r < runs.size(); ++r) {
      std::vector<std::int32_t> ids;
      ids.reserve(runs[r].tokens);
      for (auto [pi, offset] : runs[r].sources) {
        if (piece_ids[pi].empty()) piece_ids[pi] = piece_tokens(s.layout[pi], p.request);
        ids.push_back(piece_ids[pi][offset]);
      }
      check_position(runs[r].position + runs[r].tokens - 1);
      const bool sample = p.last_chunk && r + 1 == runs.size();
      if (sample && runs[r].position + runs[r].tokens != p.prompt_tokens) {
        throw std::invalid_argument("plan: request " + std::to_string(p.request) +
                                    ": last chunk does not end with the prompt's last token");
      }
      batch.add(s.region_start, std::int32_t(runs[r].position), ids, {}, sample ? outputs++ : -1);
    }
    if (p.last_chunk && runs.empty()) {
      throw std::invalid_argument("plan: request " + std::to_string(p.request) +
                                  ": last chunk computes no token to sample from");
    }
  }
  for (const DecodeItem& d : plan.decodes) {
    RequestState& s = state(d.request);
    if (!s.prefilled) {
      throw std::invalid_argument("plan: request " + std::to_string(d.request) +
                                  " decodes before its prefill finished");
    }
    if (std::int32_t(s.next_position) >= s.capacity) grow_region(s, s.next_position + 1);
    check_position(s.next_position);
    batch.add(s.region_start, std::int32_t(s.next_position), {s.last_token}, {}, outputs++);
  }
  stats_.computed_tokens = std::uint64_t(batch.tokens());
  pad(batch);
  at::Tensor sampled_host;
  if (!batch.empty()) {
    const ForwardInputs in = batch.finalize(*ops_, cache_.rows());
    trace.at("finalize");
    // The KV cache's address is part of what a captured graph launches with (no key when
    // graphs are off: the ops run the pass as given).
    const std::string shape =
        options_.cuda_graphs.enabled
            ? in.shape() + " c" +
                  std::to_string(reinterpret_cast<std::uintptr_t>(cache_.k.data_ptr()))
            : std::string();
    const at::Tensor logits =
        ops_->run_forward(shape, in.tokens, in.buffer, [&](const at::Tensor& buffer) {
          return model_->forward(in.on(buffer), cache_, nullptr, false);
        });
    trace.at("forward");
    if (logits.defined()) {
      sampled_host = ops_->to_host(ops_->argmax_rows(logits));
      if (options_.keep_logits) last_logits_ = ops_->to_host(logits.to(at::kFloat));
    }
  }
  // The pass's end; with copies issued after its launch, the host's time beyond it is overhead
  // (as the calibrated model counts it), not the pass's.
  int m_pass = -1;
  if (copies_after_forward) {
    m_pass = clock.mark();
    trace.at("launched");
    Injections late_inj;
    std::vector<PendingEncode> late_encodes;
    issue_copies(late_inj, late_encodes);
    held.release();
    evict_late_from_host();
    if (!late_encodes.empty()) {
      // Facts the host tier did not hold, encoded instead, on the compute stream after the pass.
      settle_offloads();
      run_encodes(late_encodes, late_inj);
    }
  }
  const int m_forward = clock.mark();
  trace.at("to_host");
  clock.synchronize();
  trace.at("sync");
  // The device stood idle between the last step and this one while the host planned; copies in
  // flight then moved on, time the virtual clock has not seen. Count it in this step.
  const std::int64_t gap = clock.gap_ns();
  const bool gap_counts = copies_in_flight_ && gap > 0;
  copies_in_flight_ = (!pending_loads_.empty() && !ops_->copies_done(last_load_ticket_)) ||
                      !ops_->copies_done(last_offload_ticket_);
  const AttentionCounts& calls = ops_->attention_counts();
  stats_.graph_replays = ops_->graph_replays() - replays_before;
  stats_.attention = {calls.split_kv - calls_before.split_kv, calls.flash - calls_before.flash,
                      calls.math - calls_before.math};

  BatchResult result;
  result.duration_ns = clock.elapsed_ns(m_start, m_forward);
  result.phases.load_ns = clock.elapsed_ns(m_start, m_load);
  result.phases.encode_ns = clock.elapsed_ns(m_load, m_encode);
  result.phases.inject_ns = clock.elapsed_ns(m_inject_begin, m_inject_end);
  const SimTime forward_ns = clock.elapsed_ns(m_inject_end, m_pass >= 0 ? m_pass : m_forward);
  (plan.prefills.empty() ? result.phases.decode_ns : result.phases.prefill_ns) = forward_ns;
  result.phases.overhead_ns = result.duration_ns - result.phases.load_ns - result.phases.encode_ns -
                              result.phases.inject_ns - forward_ns;
  if (gap_counts) {
    result.duration_ns += gap;
    result.phases.overhead_ns += gap;
    stats_.copy_gap_ns = gap;
    total_copy_gap_ns_ += gap;
  }
  if (sampled_host.defined()) {
    const std::int32_t* t = sampled_host.data_ptr<std::int32_t>();
    result.tokens.assign(t, t + sampled_host.numel());
  }

  // Advance request state with the sampled tokens (prefills first, then decodes).
  std::size_t next = 0;
  for (const PrefillItem& p : plan.prefills) {
    RequestState& s = state(p.request);
    s.computed_done += p.computed_now;
    if (p.last_chunk) {
      s.prefilled = true;
      s.next_position = p.prompt_tokens;
      s.last_token = result.tokens.at(next++);
    }
  }
  for (const DecodeItem& d : plan.decodes) {
    RequestState& s = state(d.request);
    s.next_position++;
    s.last_token = result.tokens.at(next++);
  }
  for (RequestId r : plan.released) {
    const auto it = requests_.find(r);
    if (it == requests_.end()) continue;  // released before it started: nothing to free
    rows_.free(it->second.region_start, it->second.capacity);
    requests_.erase(it);
  }
  free_transients();
  if (trace.on()) {
    trace.note("gap_us=" + std::to_string(gap / 1000) +
               " prefills=" + std::to_string(plan.prefills.size()) +
               " decodes=" + std::to_string(plan.decodes.size()) +
               " n_offloads=" + std::to_string(plan.offloads.size()) +
               " n_async_offloads=" + std::to_string(plan.async_offloads.size()) +
               " n_evictions=" + std::to_string(plan.evictions.size()) +
               " n_host_evictions=" + std::to_string(plan.host_evictions.size()) +
               " n_async_loads=" + std::to_string(plan.async_loads.size()) +
               " offl_begin_us=" + std::to_string(offload_parts_.begin / 1000) +
               " offl_settle_us=" + std::to_string(offload_parts_.settle / 1000) +
               " offl_store_us=" + std::to_string(offload_parts_.store / 1000) +
               " offl_end_us=" + std::to_string(offload_parts_.end / 1000) +
               " offl_tickets_us=" + std::to_string(offload_parts_.tickets / 1000) +
               " tier_mb=" + std::to_string(host_tier_->reserved_bytes() >> 20) +
               " tokens=" + std::to_string(stats_.computed_tokens) + " device_us=" +
               std::to_string(result.duration_ns / 1000) + " " + ops_->allocator_counters());
  }
  return result;
}

std::pair<at::Tensor, at::Tensor> GpuExecutor::request_kv(RequestId request,
                                                          std::uint32_t n) const {
  const auto it = requests_.find(request);
  if (it == requests_.end()) throw std::invalid_argument("request_kv: request not running");
  const std::int64_t start = it->second.region_start;
  return {cache_.k.narrow(1, start, n).to(at::kCPU), cache_.v.narrow(1, start, n).to(at::kCPU)};
}

at::Tensor GpuExecutor::request_keys(RequestId request, std::uint32_t layer,
                                     std::uint32_t n) const {
  const auto it = requests_.find(request);
  if (it == requests_.end()) throw std::invalid_argument("request_keys: request not running");
  return cache_.k.select(0, layer).narrow(0, it->second.region_start, n);
}

at::Tensor GpuExecutor::scratch_forward(std::int32_t start, std::int32_t position,
                                        const std::vector<std::int32_t>& ids) {
  ForwardBatch batch;
  batch.add(start, position, ids, {}, 0);
  return model_->forward(batch.finalize(*ops_, cache_.rows()), cache_, nullptr, false);
}

at::Tensor GpuExecutor::prefill_logits(const std::vector<std::int32_t>& tokens) {
  c10::InferenceMode guard;
  const std::int32_t start = alloc_rows(std::int32_t(tokens.size()));
  const at::Tensor logits = scratch_forward(start, 0, tokens);
  rows_.free(start, std::int32_t(tokens.size()));
  return logits.select(0, 0).to(at::kFloat).to(at::kCPU);
}

void GpuExecutor::settle_device() {
  if (!(options_.settle_ms > 0)) return;
  HostTrace trace("host settle:");
  const std::int32_t n = std::min<std::int32_t>(1024, std::int32_t(cache_.rows()) / 8);
  if (n < 1) return;
  const std::int32_t start = alloc_rows(n);
  const std::vector<std::int32_t> ids(std::size_t(n), 1);
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() <
         options_.settle_ms) {
    (void)scratch_forward(start, 0, ids);
    ops_->clock().synchronize();
  }
  rows_.free(start, n);
  trace.at("passes");
  // The step's idle gap (counted where copies were in flight) starts after the passes.
  ops_->clock().reset();
  ops_->clock().mark();
}

void GpuExecutor::warm_up() {
  // A prefill of a whole step's token budget, then one token over its keys: the GEMMs, the
  // sampling and both attention paths (flash or math for the prefill, split-KV for the token)
  // run once, and the allocator grows to the largest step's activations (a first step larger
  // than the warm-up paid about 5 ms of allocations on an H200).
  c10::InferenceMode guard;
  HostTrace trace("host warm-up:");
  const std::int32_t n = std::min<std::int32_t>(std::int32_t(options_.max_batch_tokens),
                                                std::int32_t(cache_.rows()) / 4);
  if (n < 2) return;
  std::vector<std::int32_t> ids(std::size_t(n), 0);
  for (std::int32_t i = 0; i < n; ++i) ids[std::size_t(i)] = i % std::int32_t(options_.model.vocab);
  const std::int32_t start = alloc_rows(n + 1);
  (void)scratch_forward(start, 0, ids);
  const at::Tensor logits = scratch_forward(start, n, {ids[0]});
  (void)ops_->to_host(ops_->argmax_rows(logits));
  trace.at("passes");
  // With a host tier, start both copy lanes now (their streams, threads and events, the first
  // use of libtorch's stream pool, a first copy each way); otherwise the first step with
  // asynchronous copies would start them while the device waits for its first launch.
  if (options_.host_bytes > 0) host_tier_->warm_copies(*pool_, *ops_);
  trace.at("copies");
  const std::uint32_t bucket = padding_.above > 0 ? padding_.bucket : 0;
  model_->warm_products(std::int32_t(std::min(options_.warm_rows, options_.max_batch_tokens)),
                        std::int32_t(bucket), std::int32_t(options_.max_batch_tokens));
  ops_->clock().synchronize();
  trace.at("products");
  rows_.free(start, n + 1);
}

}  // namespace inferscale
