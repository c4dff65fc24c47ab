#include "sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <queue>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include "executor/cost_model/cost_model.h"
#include "sim/closed_loop.h"
#include "sim/node_store.h"
#include "sim/partition.h"
#include "sim/progress.h"
#include "sim/replica_windows.h"
#include "sim/router.h"
#include "sim/sim_events.h"
#include "sim/summarize.h"
#include "sim/timeline.h"
#include "sim/trace_ahead.h"
#include "sim/user_map.h"
#include "traces/error.h"
#include "traces/record_stream.h"

namespace inferscale {

namespace {

using namespace sim_events;

constexpr SimTime kInfinity = std::numeric_limits<SimTime>::max();

std::uint32_t cwe_context_tokens(const FactRecord& f, const ServingConfig& s) {
  if (s.cwe_window == 0) return 0;
  if (f.context_tokens.empty()) return s.cwe_window * s.turn_tokens;
  std::uint32_t sum = 0;
  const std::size_t n = std::min<std::size_t>(s.cwe_window, f.context_tokens.size());
  for (std::size_t i = 0; i < n; ++i) sum += f.context_tokens[i];
  return sum;
}

}  // namespace

struct Simulator::Impl {
  const RunConfig& cfg;
  TraceOpener open_trace_fn;
  std::uint64_t population_facts = 0;
  EncodeCostFn encode_cost;
  SimOutputs outputs;
  std::vector<std::unique_ptr<Executor>> executors;
  std::vector<std::unique_ptr<Replica>> replicas;
  std::unique_ptr<RemoteStore> remote;            // the fleet's remote tier, when enabled
  std::vector<std::unique_ptr<NodeStore>> nodes;  // tiers below the GPU, when any is enabled
  std::unique_ptr<Router> router;
  HashRing home;
  FactTable facts;
  RequestPool pool;
  Metrics metrics;
  std::vector<StepChain> chains;  // by replica
  std::priority_queue<Event, std::vector<Event>, EventAfter> heap{EventAfter{&chains}};
  std::uint64_t seq = 0;
  std::vector<std::uint8_t> kick_pending;
  std::vector<std::uint32_t> finished;
  std::int64_t requests_seen = 0;
  UserMap<std::uint8_t> users_seen;  // distinct users (the value is unused)
  Progress progress;
  std::unique_ptr<TimelineFile> timeline;  // output.timeline, when asked for
  std::uint64_t events = 0;

  // partitioned (SimOutputs::part of parts)
  bool partitioned = false;
  // Trace records handled (all parts'), counting those a partial stream left out: the handled
  // record's position in the whole trace while it is handled.
  std::uint64_t record_index = 0;
  OrderLog requests_order, timeline_order;
  bool owned(int rep) const {
    return !partitioned || std::uint32_t(rep) % outputs.parts == outputs.part;
  }

  bool closed_loop = false;
  ClosedLoop closed;

  Impl(const RunConfig& c, TraceOpener open, ExecutorFactory make, EncodeCostFn cost,
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

  void push(SimTime t, EventKind kind, std::uint64_t arg) {
    // In windows, every event is a replica's (a kick or a step end; arg: the replica).
    (window_rows ? replica_heaps[arg] : heap).push(Event{t, kind, seq++, arg});
  }

  /// Whether `r` comes after the facts declared at t = 0 (preload before it).
  static bool starts_clock(const TraceRecord& r) {
    return r.time() > 0 || (r.kind != RecordKind::kFact && r.kind != RecordKind::kHeader);
  }

  /// Before the first request or event: real executors receive the warm store's facts.
  bool preloaded = false;
  void preload() {
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

  void kick(int rep, SimTime now) {
    if (replicas[rep]->busy() || kick_pending[rep]) return;
    kick_pending[rep] = 1;
    // Partitioned: a kick's order among kicks is the trace position of the record that queued
    // it, the same in every part (in one process, kicks are queued only by records then).
    if (partitioned || window_rows) {
      (window_rows ? replica_heaps[rep] : heap)
          .push(Event{now, kKick, record_index, static_cast<std::uint64_t>(rep)});
    } else {
      push(now, kKick, static_cast<std::uint64_t>(rep));
    }
  }

  /// An idle replica (start_step returned -1) whose requests wait for asynchronous loads: a kick
  /// when the first of them is done.
  void wake_later(int rep, SimTime now) {
    const SimTime wake = replicas[rep]->wake_time();
    if (wake != kNever && wake > now) push(wake, kKick, static_cast<std::uint64_t>(rep));
  }

  /// On a kick (insertion order `kick_seq`).
  void try_start(int rep, SimTime now, std::uint64_t kick_seq) {
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

  void write_timeline(const Replica& r, const StepChain& chain) {
    const StepRecord& s = r.last_step();
    if (timeline_order.on())
      timeline_order.add(s.start, r.index(), chain.starts, chain.kick_seq, 1);
    timeline->add(r.index(), s);
  }

  FactId add_fact(const FactRecord& f, bool memory_write) {
    FactInfo info;
    info.user = f.user;
    info.tokens = f.tokens;
    info.encode_context_tokens = cwe_context_tokens(f, cfg.serving);
    info.created = f.time;
    info.recompute_cost_ns = recompute_cost(info.tokens, info.encode_context_tokens);
    return facts.add(info, f.id, memory_write);
  }

  /// encode_cost, memoized: facts repeat a few token counts and the price is a pure function.
  std::unordered_map<std::uint64_t, SimTime> encode_costs;
  SimTime recompute_cost(std::uint32_t tokens, std::uint32_t context_tokens) {
    if (!encode_cost) return 0;
    const std::uint64_t key = (std::uint64_t(tokens) << 32) | context_tokens;
    auto [it, inserted] = encode_costs.try_emplace(key, 0);
    if (inserted) it->second = encode_cost(tokens, context_tokens);
    return it->second;
  }

  /// The home replica of the last user looked up: a user's facts come in a run of records.
  UserId home_user = 0;
  int home_replica = -1;
  int home_of(UserId user) {
    if (home_replica < 0 || user != home_user) {
      home_user = user;
      home_replica = home.owner(user);
    }
    return home_replica;
  }

  /// `at_start`: among the stream's start records (RecordStream::start_records), which a warm
  /// store inserts.
  void on_fact(const FactRecord& f, bool at_start) {
    const FactId id = add_fact(f, false);
    if (cfg.store.warm && at_start) replicas[home_of(f.user)]->warm_insert(id);
  }

  void on_memory_write(FactId id, SimTime now) {
    const int rep = home_of(facts.user(id));
    replicas[rep]->memory_write(id, now);
    kick(rep, now);
  }

  /// `ids`: the request's dense fact ids, best last.
  void issue(RequestId id, UserId user, SimTime now, std::uint32_t query_tokens,
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

  /// Steps ending before this time that finish no request are fused (see on_step_done);
  /// kNoFusion: none.
  static constexpr SimTime kNoFusion = std::numeric_limits<SimTime>::min();
  SimTime fuse_before = kNoFusion;
  std::uint64_t fused_steps = 0;
  std::uint64_t decode_run_steps = 0;

  /// Fuses the step in flight (started at `now`, lasting `d`) when it may be, and then, while
  /// the replica ends and starts decode-only steps at once (Replica::run_decodes), the step it
  /// leaves in flight. True: `now` is the end of a fused step still to be finished.
  bool fuse_decodes(Replica& replica, int rep, SimTime& now, SimTime& d) {
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

  void on_step_done(int rep, SimTime now) {
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

  void handle(const Event& e, SimTime now) {
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

  // ---- closed loop --------------------------------------------------------------------------
  void issue_next(std::size_t u, SimTime now) {
    auto [user, p] = closed.take(u);
    issue(p.id, user, now, p.query_tokens, p.output_tokens, p.facts.data(), p.facts.size(),
          p.trace_position);
  }

  void push_issue(const std::optional<ClosedLoop::Issue>& i) {
    if (i) push(i->time, kIssue, i->user);
  }

  // ---- main loops ---------------------------------------------------------------------------
  /// The replica a record reaches before any event does (TraceAhead::ReachFn), for routers that
  /// route by the record alone.
  int reach(const TraceRecord& r, std::uint64_t nth) {
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

  /// The progress line's figures: the facts declared until the first request, then the
  /// requests done and the simulated time.
  void show_progress(double fraction, SimTime now) {
    if (preloaded) {
      progress.update(fraction, metrics.completed(), now);
    } else {
      progress.update(fraction, facts.size());
    }
  }

  void run_open(RecordStream& reader, TraceRecord& first, bool have) {
    // Not with a timeline: its steps are written in the order they start.
    // Not with asynchronous loads: an idle replica's wake-up is an event the fusion bound does
    // not see.
    const bool fuse =
        outputs.fuse_quiet_steps && timeline == nullptr && !cfg.store.host.async_loads;
    // A replica's fused steps end before the next record that reaches it (or, when the router
    // needs the replicas' state, before the next record): a record that reaches others changes
    // nothing this replica reads (a router reading loads would: fused steps leave them alone,
    // but whether a record comes here is only known at its time then). One replica is reached
    // by every request: nothing to gain.
    TraceAhead::ReachFn reach_fn;
    if (fuse && replicas.size() > 1 && router->route_ahead(0, 0) >= 0) {
      reach_fn = [this](const TraceRecord& r, std::uint64_t nth) { return reach(r, nth); };
    }
    TraceAhead ahead(reader, first, have, static_cast<int>(replicas.size()), std::move(reach_fn));
    have = !ahead.empty();
    // Until the first request: the facts declared at t = 0 (inserted with a warm store).
    progress.phase(cfg.store.warm ? "warm start" : "reading facts", "facts");
    SimTime now = 0;
    std::uint64_t tick = 0;
    std::uint64_t records_handled = 0;  // this stream's records
    while (true) {
      const TraceRecord& rec = ahead.front();
      const SimTime trace_t = have ? rec.time() : kInfinity;
      const SimTime event_t = heap.empty() ? kInfinity : heap.top().time;
      if (trace_t == kInfinity && event_t == kInfinity) break;
      if (!preloaded && (!have || starts_clock(rec))) {
        show_progress(reader.fraction_read(), now);  // the warm start's last figures
        preload();
      }
      if (trace_t <= event_t) {
        now = trace_t;
        record_index = records_handled++ + ahead.front_omitted();
        // Partitioned: records that reach other parts' replicas only declare their facts
        // (fact ids stay the whole trace's) and count.
        switch (rec.kind) {
          case RecordKind::kHeader:
            break;
          case RecordKind::kFact:
            if (!partitioned || owned(home_of(rec.fact.user))) {
              on_fact(rec.fact, records_handled <= reader.start_records());
            } else {
              add_fact(rec.fact, false);
            }
            break;
          case RecordKind::kMemoryWrite: {
            const FactId id = add_fact(rec.fact, true);
            if (!partitioned || owned(home_of(rec.fact.user))) on_memory_write(id, now);
            break;
          }
          case RecordKind::kRequest: {
            if (partitioned && !owned(router->route_ahead(rec.request.user, requests_seen))) {
              ++requests_seen;
              break;
            }
            const auto& dense = ahead.front_facts();
            issue(rec.request.id, rec.request.user, now, rec.request.query_tokens,
                  rec.request.output_tokens, dense.data(), dense.size(), requests_seen++);
            break;
          }
        }
        have = ahead.pop();
      } else {
        const Event e = heap.top();
        heap.pop();
        now = e.time;
        if (fuse && e.kind == kStepDone) fuse_before = ahead.next_for(static_cast<int>(e.arg));
        handle(e, now);
      }
      if ((++tick & 0xffff) == 0) show_progress(reader.fraction_read(), now);
    }
    show_progress(1.0, now);
  }

  // ---- replicas in turn, in windows of the trace ------------------------------------------
  // Where the replicas share nothing and a request's replica follows from its user
  // (partition_refusal: what partitioned runs need), each replica's records and events are its
  // own. The trace is then read a window at a time (its facts declared in trace order, as the
  // loop above does), and each replica in turn runs its records and events up to the window's
  // end, so that its state stays in the processor's caches for a few hundred requests instead
  // of one. requests.csv's rows wait for the window's end and are written in the order one
  // queue would have handled their step ends (compare_order, as partitioned runs merge).
  using EventHeap = std::priority_queue<Event, std::vector<Event>, EventAfter>;
  std::uint64_t windows = 0;
  std::vector<EventHeap> replica_heaps;  // by replica: its kicks and step ends
  std::vector<WindowQueue> held;         // by replica: its records of the window
  /// requests.csv's rows of the window; set: the replicas run in turn.
  std::unique_ptr<WindowRows> window_rows;  // requests.csv's rows of the window

  bool windows_apply() const {
    return !partitioned && outputs.fuse_quiet_steps && timeline == nullptr &&
           !outputs.on_complete && replicas.size() > 1 && partition_refusal(cfg).empty();
  }

  void write_window_rows() { metrics.write_held_rows(window_rows->take_order()); }

  /// Replica `rep`'s held records and its events before `end`, in the order of run_open.
  void run_replica(int rep, SimTime end, SimTime& now, std::uint64_t& tick, double fraction) {
    WindowQueue& q = held[rep];
    EventHeap& h = replica_heaps[rep];
    while (true) {
      const SimTime trace_t = q.empty() ? kInfinity : q.front().time;
      const SimTime event_t = h.empty() ? kInfinity : h.top().time;
      if (trace_t != kInfinity && trace_t <= event_t) {
        const WindowQueue::Held& r = q.front();
        now = r.time;
        record_index = r.record_index;
        if (r.write != WindowQueue::kNoWrite) {
          on_memory_write(r.write, now);
        } else {
          issue(r.id, r.user, now, r.query_tokens, r.output_tokens, q.facts(r),
                r.facts_end - r.facts_begin, r.position);
        }
        q.pop();
      } else if (event_t < end) {
        const Event e = h.top();
        h.pop();
        now = e.time;
        // Its next record, or the window's end: the records after it are not read yet.
        if (e.kind == kStepDone) fuse_before = trace_t != kInfinity ? trace_t : end;
        handle(e, now);
      } else {
        break;
      }
      if ((++tick & 0xffff) == 0) show_progress(fraction, now);
    }
    if (!q.empty()) throw std::logic_error("a held record after its window's end");
    q.clear();
  }

  void run_windows(RecordStream& reader, TraceRecord& rec, bool have) {
    replica_heaps.assign(replicas.size(), EventHeap{EventAfter{&chains}});
    held.resize(replicas.size());
    window_rows = std::make_unique<WindowRows>(replicas.size());
    metrics.hold_rows();
    // A few hundred records a replica: its state is read again while still cached; about
    // 300 bytes a request held.
    const std::uint64_t per_window = std::min<std::uint64_t>(128 * replicas.size(), 1u << 17);
    progress.phase(cfg.store.warm ? "warm start" : "reading facts", "facts");
    SimTime now = 0;
    std::uint64_t tick = 0, records_handled = 0;
    while (true) {
      std::uint64_t queued = 0;
      // Facts declared when their user first asks come between requests at t = 0: the
      // window ends at a request or memory write.
      while (have && (queued < per_window || rec.kind == RecordKind::kFact ||
                      rec.kind == RecordKind::kHeader)) {
        if (!preloaded && starts_clock(rec)) {
          show_progress(reader.fraction_read(), now);
          preload();
        }
        record_index = records_handled++ + reader.records_omitted();
        switch (rec.kind) {
          case RecordKind::kHeader:
            break;
          case RecordKind::kFact:
            on_fact(rec.fact, records_handled <= reader.start_records());
            break;
          case RecordKind::kMemoryWrite:
            held[home_of(rec.fact.user)].hold_write(rec.fact, record_index,
                                                    add_fact(rec.fact, true));
            ++queued;
            break;
          case RecordKind::kRequest:
            held[router->route_ahead(rec.request.user, requests_seen)].hold_request(
                rec.request, record_index, requests_seen, reader.request_fact_indices());
            ++requests_seen;
            ++queued;
            break;
        }
        have = reader.next(rec);
        if ((++tick & 0xffff) == 0) show_progress(reader.fraction_read(), now);
      }
      if (!preloaded && !have) {
        show_progress(reader.fraction_read(), now);
        preload();
      }
      // Every request and write before `end` is read; the unread ones come at `end` or later.
      const SimTime end = have ? rec.time() : kInfinity;
      const double fraction = reader.fraction_read();
      bool pending = false;
      for (std::size_t rep = 0; rep < replicas.size(); ++rep) {
        run_replica(static_cast<int>(rep), end, now, tick, fraction);
        pending = pending || !replica_heaps[rep].empty();
      }
      write_window_rows();
      ++windows;
      if (!have && !pending) break;
    }
    show_progress(1.0, now);
  }

  void run_closed(RecordStream& reader, TraceRecord& rec, bool have) {
    // A closed-loop trace is read whole: a user's next question waits for its previous answer.
    progress.phase("reading the trace", "records");
    std::uint64_t records = 0;
    while (have) {
      if ((++records & 0xffff) == 0) progress.update(reader.fraction_read(), records);
      switch (rec.kind) {
        case RecordKind::kHeader:
          break;
        case RecordKind::kFact:
          on_fact(rec.fact, records <= reader.start_records());
          break;
        case RecordKind::kMemoryWrite: {
          const FactId id = add_fact(rec.fact, true);
          push(rec.fact.time, kWrite, id);
          break;
        }
        case RecordKind::kRequest:
          closed.add(rec.request.user,
                     ClosedRequest{rec.request.id, rec.request.time, rec.request.query_tokens,
                                   rec.request.output_tokens, requests_seen++,
                                   reader.request_fact_indices()});
          break;
      }
      have = reader.next(rec);
    }
    preload();
    SimTime now = 0;
    const std::uint32_t c = reader.header().concurrency;
    for (std::uint32_t i = 0; i < c; ++i) push_issue(closed.activate_next(0));
    std::uint64_t tick = 0;
    while (!heap.empty()) {
      const Event e = heap.top();
      heap.pop();
      handle(e, e.time);
      if ((++tick & 0xffff) == 0) {
        const std::uint64_t total = closed.requests();
        progress.update(total ? double(metrics.completed()) / double(total) : 1.0,
                        metrics.completed(), e.time);
      }
      now = e.time;
    }
    progress.update(1.0, metrics.completed(), now);
  }

  RunSummary run() {
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

  void close_outputs() {
    metrics.close();
    requests_order.close();
    timeline_order.close();
    if (timeline != nullptr) timeline->close();
  }

  RunSummary partial_summary() {
    progress.finish();
    if (window_rows) write_window_rows();  // the window's rows so far, in order
    close_outputs();
    return summarize();
  }

  RunSummary summarize() {
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
};

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
