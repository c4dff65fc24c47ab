// Simulator::Impl's loops: they read the trace and run the events. run_open: one event queue
// for the fleet; run_windows: replicas in turn over windows of the trace, where they share
// nothing; run_closed: a closed loop, whose trace is read whole first.
#include <algorithm>
#include <limits>
#include <stdexcept>

#include "sim/simulator_impl.h"
#include "sim/trace_ahead.h"

namespace inferscale {

namespace {

using namespace sim_events;

constexpr SimTime kInfinity = std::numeric_limits<SimTime>::max();

}  // namespace

void Simulator::Impl::run_open(RecordStream& reader, TraceRecord& first, bool have) {
  // Not with a timeline: its steps are written in the order they start.
  // Not with asynchronous loads: an idle replica's wake-up is an event the fusion bound does
  // not see.
  const bool fuse = outputs.fuse_quiet_steps && timeline == nullptr && !cfg.store.host.async_loads;
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

void Simulator::Impl::run_replica(int rep, SimTime end, SimTime& now, std::uint64_t& tick,
                                  double fraction) {
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

void Simulator::Impl::run_windows(RecordStream& reader, TraceRecord& rec, bool have) {
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
          held[home_of(rec.fact.user)].hold_write(rec.fact, record_index, add_fact(rec.fact, true));
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

void Simulator::Impl::run_closed(RecordStream& reader, TraceRecord& rec, bool have) {
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

}  // namespace inferscale
