// Simulator::Impl (sim/simulator_impl.h): its construction, its event handlers and its results;
// the loops that read the trace and run the events are in sim/simulator_loops.cpp.
#include "sim/simulator.h"

#include <algorithm>
#include <stdexcept>

#include "executor/cost_model/cost_model.h"
#include "sim/simulator_impl.h"
#include "sim/summarize.h"
#include "traces/error.h"

namespace inferscale {

namespace {

using namespace sim_events;

std::uint32_t cwe_context_tokens(const FactRecord& f, const ServingConfig& s) {
  if (s.cwe_window == 0) return 0;
  if (f.context_tokens.empty()) return s.cwe_window * s.turn_tokens;
  std::uint32_t sum = 0;
  const std::size_t n = std::min<std::size_t>(s.cwe_window, f.context_tokens.size());
  for (std::size_t i = 0; i < n; ++i) sum += f.context_tokens[i];
  return sum;
}

}  // namespace

Simulator::Impl::Impl(const RunConfig& c, TraceOpener open, ExecutorFactory make, EncodeCostFn cost,
                      SimOutputs out, NextAccessFn next_access)
    : cfg(c),
      open_trace_fn(std::move(open)),
      encode_cost(std::move(cost)),
      outputs(std::move(out)),
      router(make_router(c.router, static_cast<int>(c.replicas),
                         static_cast<int>(c.node.gpus > 0 ? c.replicas_per_node() : c.replicas))),
      home(static_cast<int>(c.replicas)),
      metrics(outputs.requests_csv),
      progress(outputs.progress, outputs.partial_dir),
      partitioned(outputs.parts > 1),
      requests_order(outputs.requests_order),
      timeline_order(outputs.timeline_order) {
  const bool kv_inject = c.serving.mode == ServingMode::kKvInject;
  if (kv_inject && c.store.remote.enabled) remote = std::make_unique<RemoteStore>(c, facts);
  if (kv_inject && c.lower_tiers()) {
    for (std::uint32_t n = 0; n < c.nodes; ++n) {
      nodes.push_back(
          std::make_unique<NodeStore>(static_cast<int>(n), c, facts, remote.get(), next_access));
    }
  }
  for (std::uint32_t i = 0; i < c.replicas; ++i) {
    executors.push_back(make(static_cast<int>(i)));
    NodeStore* node = nodes.empty() ? nullptr : nodes[i / c.replicas_per_node()].get();
    replicas.push_back(std::make_unique<Replica>(static_cast<int>(i), c, facts, pool,
                                                 *executors.back(), next_access, node));
    if (node != nullptr) node->add_replica(replicas.back().get());
  }
  if (c.lower_tiers()) {
    auto model = std::make_shared<CostModel>(
        c.model, CostRates::from_gpu(c.gpu, c.model.weight_dtype_bytes() == 1),
        TensorParallel::from_gpu(c.gpu, c.tp));
    for (auto& r : replicas) {
      r->set_load_cost([model](std::uint64_t bytes) { return model->load_cost_ns(bytes); });
    }
  }
  kick_pending.assign(c.replicas, 0);
  chains.resize(c.replicas);
  if (!outputs.timeline_json.empty()) {
    timeline = std::make_unique<TimelineFile>(outputs.timeline_json);
  }
}

void Simulator::Impl::preload() {
  if (preloaded) return;
  preloaded = true;
  for (auto& r : replicas) r->preload();
  // The tiers' statistics count from here: a warm start comes before the clock, and its
  // evictions depend on how much of the population it was given (sim/warm_window.h).
  for (auto& r : replicas) r->restart_tier_stats();
  for (auto& n : nodes) n->restart_tier_stats();
  if (remote) remote->tier().restart_stats();
  progress.phase("simulation", "requests");
}

void Simulator::Impl::try_start(int rep, SimTime now, std::uint64_t kick_seq) {
  Replica& r = *replicas[rep];
  if (r.busy() || !r.has_work()) return;
  const SimTime d = r.start_step(now);
  if (d < 0) {
    wake_later(rep, now);
    return;
  }
  StepChain& chain = chains[rep];
  if (window_rows) window_rows->keep_chain(rep, chain.starts);
  chain.kick_seq = kick_seq;
  chain.starts.clear();
  chain.starts.push_back(now);
  push(now + d, kStepDone, static_cast<std::uint64_t>(rep));
  if (timeline != nullptr) write_timeline(r, chain);
}

void Simulator::Impl::write_timeline(const Replica& r, const StepChain& chain) {
  const StepRecord& s = r.last_step();
  if (timeline_order.on()) timeline_order.add(s.start, r.index(), chain.starts, chain.kick_seq, 1);
  timeline->add(r.index(), s);
}

FactId Simulator::Impl::add_fact(const FactRecord& f, bool memory_write) {
  FactInfo info;
  info.user = f.user;
  info.tokens = f.tokens;
  info.encode_context_tokens = cwe_context_tokens(f, cfg.serving);
  info.created = f.time;
  info.recompute_cost_ns = recompute_cost(info.tokens, info.encode_context_tokens);
  return facts.add(info, f.id, memory_write);
}

SimTime Simulator::Impl::recompute_cost(std::uint32_t tokens, std::uint32_t context_tokens) {
  if (!encode_cost) return 0;
  const std::uint64_t key = (std::uint64_t(tokens) << 32) | context_tokens;
  return encode_costs.get(key, [&] { return encode_cost(tokens, context_tokens); });
}

void Simulator::Impl::on_fact(const FactRecord& f, bool at_start) {
  const FactId id = add_fact(f, false);
  if (cfg.store.warm && at_start) replicas[home_of(f.user)]->warm_insert(id);
}

void Simulator::Impl::on_memory_write(FactId id, SimTime now) {
  const int rep = home_of(facts.user(id));
  replicas[rep]->memory_write(id, now);
  kick(rep, now);
}

void Simulator::Impl::issue(RequestId id, UserId user, SimTime now, std::uint32_t query_tokens,
                            std::uint32_t output_tokens, const std::uint32_t* ids, std::size_t n,
                            std::int64_t pos) {
  const std::uint32_t ri = pool.acquire();
  Request& r = pool[ri];
  r.id = id;
  r.user = user;
  r.arrival = now;
  r.query_tokens = query_tokens;
  r.output_tokens = output_tokens;
  r.trace_position = pos;
  const std::size_t k = std::min<std::size_t>(n, cfg.serving.k);
  r.facts.assign(ids + (n - k), ids + n);  // best last: keep the last k
  users_seen[user] = 1;
  const int rep = router->route(user, replicas);
  replicas[rep]->enqueue(ri, now);
  kick(rep, now);
}

bool Simulator::Impl::fuse_decodes(Replica& replica, int rep, SimTime& now, SimTime& d) {
  bool fused = false;
  while (now + d < fuse_before && !replica.step_finishes_request()) {
    now += d;
    ++events;
    ++fused_steps;
    fused = true;
    const std::uint32_t run = replica.run_decodes(now, fuse_before, chains[rep].starts, d);
    if (run == 0) break;
    // Steps started by the run, the last one in flight at `now`: the others were fused.
    events += run - 1;
    fused_steps += run - 1;
    decode_run_steps += run;
    fused = false;
  }
  return fused;
}

void Simulator::Impl::on_step_done(int rep, SimTime now) {
  Replica& replica = *replicas[rep];
  while (true) {
    finished.clear();
    replica.finish_step(now, finished);
    if (!finished.empty() && requests_order.on()) {
      const StepChain& c = chains[rep];
      requests_order.add(now, rep, c.starts, c.kick_seq, std::uint32_t(finished.size()));
    }
    const std::size_t rows_begin = window_rows ? metrics.rows_held() : 0;
    for (const std::uint32_t ri : finished) {
      const Request& r = pool[ri];
      metrics.record(r, static_cast<std::uint32_t>(r.facts.size()), cfg.slo.ttft_ms,
                     cfg.slo.tpot_ms);
      if (outputs.on_complete) outputs.on_complete(r);
      if (closed_loop) push_issue(closed.on_complete(r.user, now));
      pool.release(ri);
    }
    if (window_rows && metrics.rows_held() != rows_begin) {
      window_rows->add(now, rep, chains[rep].kick_seq, chains[rep].starts, rows_begin,
                       metrics.rows_held());
    }
    if (replica.busy() || !replica.has_work()) return;
    SimTime d = replica.start_step(now);
    if (d < 0) {
      wake_later(rep, now);
      return;
    }
    chains[rep].starts.push_back(now);
    if (timeline != nullptr) write_timeline(replica, chains[rep]);
    // Fused: the next step's end is handled here rather than from the queue. Nothing else
    // reads or changes this replica before the next trace record that reaches it
    // (fuse_before; its only queued event is its step's end; the others' events touch their
    // own state, and records that reach others too), and a step that finishes no request
    // leaves the shared metrics, the request pool and its load alone, so handling it ahead of
    // the other replicas' earlier events changes nothing; the step end queued at last is
    // ordered among equal times by its chain (StepChain), as if queued in turn. A step ending
    // at that record's time goes through the queue: the record comes first at equal times.
    if (fuse_decodes(replica, rep, now, d)) continue;
    push(now + d, kStepDone, static_cast<std::uint64_t>(rep));
    return;
  }
}

void Simulator::Impl::handle(const Event& e, SimTime now) {
  ++events;
  switch (e.kind) {
    case kStepDone:
      on_step_done(static_cast<int>(e.arg), now);
      break;
    case kKick:
      kick_pending[e.arg] = 0;
      try_start(static_cast<int>(e.arg), now, e.seq);
      break;
    case kWrite:
      on_memory_write(e.arg, now);
      break;
    case kIssue:
      issue_next(static_cast<std::size_t>(e.arg), now);
      break;
  }
}

void Simulator::Impl::issue_next(std::size_t u, SimTime now) {
  auto [user, p] = closed.take(u);
  issue(p.id, user, now, p.query_tokens, p.output_tokens, p.facts.data(), p.facts.size(),
        p.trace_position);
}

int Simulator::Impl::reach(const TraceRecord& r, std::uint64_t nth) {
  switch (r.kind) {
    case RecordKind::kHeader:
      return -1;
    case RecordKind::kFact:
      return cfg.store.warm ? home_of(r.fact.user) : -1;
    case RecordKind::kMemoryWrite:
      return home_of(r.fact.user);
    case RecordKind::kRequest:
      return router->route_ahead(r.request.user, nth);
  }
  return -1;
}

RunSummary Simulator::Impl::run() {
  const std::unique_ptr<RecordStream> stream = open_trace_fn();
  RecordStream& reader = *stream;
  // A generated trace knows its population: the fact table then never moves (a move holds
  // the old and the new table at once). Bounded (6.6 GB of address space) so that a larger
  // population does not ask for more address space than a machine lends at once.
  facts.reserve(std::min<std::uint64_t>(reader.population_facts(), std::uint64_t{1} << 27));
  if (compact_records(outputs.compact_ids, cfg.replicas, reader.population_facts())) {
    for (auto& r : replicas) r->set_compact_ids();
    for (auto& n : nodes) n->set_recycle_ids();
  }
  TraceRecord rec;
  bool have = reader.next(rec);
  closed_loop =
      have && rec.kind == RecordKind::kHeader && rec.header.arrival == ArrivalMode::kClosedLoop;
  closed.set_think_time(reader.header().think_time_ns);
  if (closed_loop && partitioned) {
    throw InputError(reader.name(),
                     "a closed-loop trace cannot be partitioned over processes (a user's next "
                     "request waits on the whole fleet's answers): run it in one process");
  }
  if (closed_loop) {
    run_closed(reader, rec, have);
  } else if (windows_apply()) {
    run_windows(reader, rec, have);
  } else {
    run_open(reader, rec, have);
  }
  population_facts = reader.population_facts();
  if (pool.in_use() != 0) {
    progress.finish();
    throw std::logic_error(std::to_string(pool.in_use()) + " requests never completed");
  }
  progress.phase("writing results", nullptr);
  close_outputs();
  RunSummary summary = summarize();
  progress.finish();
  return summary;
}

void Simulator::Impl::close_outputs() {
  metrics.close();
  requests_order.close();
  timeline_order.close();
  if (timeline != nullptr) timeline->close();
}

RunSummary Simulator::Impl::partial_summary() {
  progress.finish();
  if (window_rows) write_window_rows();  // the window's rows so far, in order
  close_outputs();
  return summarize();
}

RunSummary Simulator::Impl::summarize() {
  SummaryInputs in{cfg, metrics, outputs, replicas, nodes};
  in.owned = [this](int rep) { return owned(rep); };
  in.events = events;
  in.facts = std::max<std::uint64_t>(population_facts, facts.size());
  in.users = users_seen.size();
  in.wall_s = progress.wall_s();
  in.fused_steps = fused_steps;
  in.decode_run_steps = decode_run_steps;
  in.windows = windows;
  return summarize_run(in);
}

Simulator::Simulator(const RunConfig& cfg, std::string trace_path, ExecutorFactory executors,
                     EncodeCostFn encode_cost, SimOutputs outputs, NextAccessFn next_access)
    : Simulator(
          cfg,
          [path = std::move(trace_path), fast = cfg.fast_paths] { return open_trace(path, fast); },
          std::move(executors), std::move(encode_cost), std::move(outputs),
          std::move(next_access)) {}

Simulator::Simulator(const RunConfig& cfg, TraceOpener open, ExecutorFactory executors,
                     EncodeCostFn encode_cost, SimOutputs outputs, NextAccessFn next_access)
    : impl_(std::make_unique<Impl>(cfg, std::move(open), std::move(executors),
                                   std::move(encode_cost), std::move(outputs),
                                   std::move(next_access))) {}

Simulator::~Simulator() = default;

void Simulator::set_load_cost(std::function<SimTime(std::uint64_t)> cost) {
  for (auto& r : impl_->replicas) r->set_load_cost(cost);
}

RunSummary Simulator::run() {
  return impl_->run();
}

RunSummary Simulator::partial_summary() {
  return impl_->partial_summary();
}

RequestValues Simulator::take_request_values() {
  Metrics& m = impl_->metrics;
  return RequestValues{std::move(m.ttft_ms()), std::move(m.tpot_ms()), std::move(m.e2e_ms()),
                       std::move(m.queue_ms())};
}

}  // namespace inferscale
