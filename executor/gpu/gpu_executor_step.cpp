// GpuExecutor::execute: the order of a step, one private member function per phase.
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <unordered_set>

#include "executor/copy_order.h"
#include "executor/gpu/gpu_executor.h"
#include "executor/gpu/host_trace.h"

namespace inferscale {

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
  StepMarks marks;
  marks.start = clock.mark();
  HostTrace trace;
  offload_parts_ = OffloadIssueParts{trace.on()};

  // Requests starting now own their cache rows before loads and encodes write into them.
  for (const PrefillItem& p : plan.prefills) {
    if (p.first_chunk) start_request(p);
  }

  // Offloads, evictions, loads, host evictions, encodes: the documented order.
  const std::vector<FactId> late_host_evictions = evict_untouched_from_host(plan);
  trace.at("host_evictions");
  for (const FactLoad& o : plan.offloads) offload(o.fact);
  trace.at("sync_offloads");
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
    issue_copies(plan, inj, encodes, trace);
  }
  wait_for_injected_loads(plan);
  marks.load = clock.mark();
  trace.at("load_wait");
  if (!copies_after_forward) evict_late_from_host(late_host_evictions);
  run_step_encodes(plan, encodes, inj);
  marks.encode = clock.mark();
  trace.at("encodes");

  // First chunks: the cached header and the injected facts, one fused launch for the step.
  compose_prompts(plan, inj);
  const at::Tensor inj_dev = upload_injections(inj);
  marks.inject_begin = clock.mark();
  launch_injections(inj, inj_dev);
  marks.inject_end = clock.mark();
  trace.at("inject");

  // One forward pass over every prefill chunk and decode item.
  ForwardBatch batch;
  add_forward_items(plan, batch);
  const at::Tensor sampled_host = run_forward_pass(batch, trace);
  // The pass's end; with copies issued after its launch, the host's time beyond it is overhead
  // (as the calibrated model counts it), not the pass's.
  if (copies_after_forward) {
    marks.pass = clock.mark();
    trace.at("launched");
    Injections late_inj;
    std::vector<PendingEncode> late_encodes;
    issue_copies(plan, late_inj, late_encodes, trace);
    held.release();
    evict_late_from_host(late_host_evictions);
    if (!late_encodes.empty()) {
      // Facts the host tier did not hold, encoded instead, on the compute stream after the pass.
      settle_offloads();
      run_encodes(late_encodes, late_inj);
    }
  }
  marks.forward = clock.mark();
  trace.at("to_host");
  clock.synchronize();
  trace.at("sync");
  const std::int64_t gap = clock.gap_ns();
  BatchResult result = measure_step(plan, marks, gap, calls_before, replays_before);
  if (sampled_host.defined()) {
    const std::int32_t* t = sampled_host.data_ptr<std::int32_t>();
    result.tokens.assign(t, t + sampled_host.numel());
  }
  advance_requests(plan, result.tokens);
  free_transients();
  if (trace.on()) trace_step(trace, plan, gap, result);
  return result;
}

std::vector<FactId> GpuExecutor::evict_untouched_from_host(const BatchPlan& plan) {
  // A host eviction of a fact this step neither offloads nor loads runs first, so that the
  // offloads reuse its blocks (the host tier is page-locked up front; growing it inside a step
  // stalls the device).
  std::vector<FactId> late;
  if (plan.host_evictions.empty()) return late;
  std::unordered_set<FactId> touched;
  for (const FactLoad& o : plan.offloads) touched.insert(o.fact);
  for (const FactLoad& o : plan.async_offloads) touched.insert(o.fact);
  for (const FactLoad& l : plan.loads) touched.insert(l.fact);
  for (const FactLoad& l : plan.async_loads) touched.insert(l.fact);
  for (FactId f : plan.host_evictions) {
    if (touched.count(f) > 0) {
      late.push_back(f);
    } else {
      settle(f);  // an asynchronous load may still read its host blocks
      host_tier_->erase(f);
    }
  }
  return late;
}

void GpuExecutor::evict_late_from_host(const std::vector<FactId>& facts) {
  for (FactId f : facts) {
    settle(f);
    host_tier_->erase(f);
  }
}

void GpuExecutor::issue_copies(const BatchPlan& plan, Injections& into,
                               std::vector<PendingEncode>& fallback, HostTrace& trace) {
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
}

void GpuExecutor::wait_for_injected_loads(const BatchPlan& plan) {
  if (pending_loads_.empty()) return;
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

void GpuExecutor::run_step_encodes(const BatchPlan& plan, std::vector<PendingEncode>& encodes,
                                   Injections& inj) {
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
}

void GpuExecutor::compose_prompts(const BatchPlan& plan, Injections& inj) {
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
}

void GpuExecutor::add_forward_items(const BatchPlan& plan, ForwardBatch& batch) {
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
}

at::Tensor GpuExecutor::run_forward_pass(const ForwardBatch& batch, HostTrace& trace) {
  if (batch.empty()) return at::Tensor();
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
  if (!logits.defined()) return at::Tensor();
  at::Tensor sampled_host = ops_->to_host(ops_->argmax_rows(logits));
  if (options_.keep_logits) last_logits_ = ops_->to_host(logits.to(at::kFloat));
  return sampled_host;
}

BatchResult GpuExecutor::measure_step(const BatchPlan& plan, const StepMarks& m, std::int64_t gap,
                                      const AttentionCounts& calls_before,
                                      std::uint64_t replays_before) {
  StepClock& clock = ops_->clock();
  // The device stood idle between the last step and this one while the host planned; copies in
  // flight then moved on, time the virtual clock has not seen. Count it in this step.
  const bool gap_counts = copies_in_flight_ && gap > 0;
  copies_in_flight_ = (!pending_loads_.empty() && !ops_->copies_done(last_load_ticket_)) ||
                      !ops_->copies_done(last_offload_ticket_);
  const AttentionCounts& calls = ops_->attention_counts();
  stats_.graph_replays = ops_->graph_replays() - replays_before;
  stats_.attention = {calls.split_kv - calls_before.split_kv, calls.flash - calls_before.flash,
                      calls.math - calls_before.math};

  BatchResult result;
  result.duration_ns = clock.elapsed_ns(m.start, m.forward);
  result.phases.load_ns = clock.elapsed_ns(m.start, m.load);
  result.phases.encode_ns = clock.elapsed_ns(m.load, m.encode);
  result.phases.inject_ns = clock.elapsed_ns(m.inject_begin, m.inject_end);
  const SimTime forward_ns = clock.elapsed_ns(m.inject_end, m.pass >= 0 ? m.pass : m.forward);
  (plan.prefills.empty() ? result.phases.decode_ns : result.phases.prefill_ns) = forward_ns;
  result.phases.overhead_ns = result.duration_ns - result.phases.load_ns - result.phases.encode_ns -
                              result.phases.inject_ns - forward_ns;
  if (gap_counts) {
    result.duration_ns += gap;
    result.phases.overhead_ns += gap;
    stats_.copy_gap_ns = gap;
    total_copy_gap_ns_ += gap;
  }
  return result;
}

void GpuExecutor::advance_requests(const BatchPlan& plan, const std::vector<std::int32_t>& tokens) {
  // Prefills first, then decodes: the order of the sampled rows.
  std::size_t next = 0;
  for (const PrefillItem& p : plan.prefills) {
    RequestState& s = state(p.request);
    s.computed_done += p.computed_now;
    if (p.last_chunk) {
      s.prefilled = true;
      s.next_position = p.prompt_tokens;
      s.last_token = tokens.at(next++);
    }
  }
  for (const DecodeItem& d : plan.decodes) {
    RequestState& s = state(d.request);
    s.next_position++;
    s.last_token = tokens.at(next++);
  }
  for (RequestId r : plan.released) {
    const auto it = requests_.find(r);
    if (it == requests_.end()) continue;  // released before it started: nothing to free
    rows_.free(it->second.region_start, it->second.capacity);
    requests_.erase(it);
  }
}

void GpuExecutor::trace_step(HostTrace& trace, const BatchPlan& plan, std::int64_t gap,
                             const BatchResult& result) {
  trace.note(
      "gap_us=" + std::to_string(gap / 1000) + " prefills=" + std::to_string(plan.prefills.size()) +
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
      " tokens=" + std::to_string(stats_.computed_tokens) +
      " device_us=" + std::to_string(result.duration_ns / 1000) + " " + ops_->allocator_counters());
}

}  // namespace inferscale
