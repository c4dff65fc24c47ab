#pragma once
// @brief Simulator::Impl: the state of a run and its event handling, private to the simulator.
// sim/simulator.cpp builds it, handles its events and writes its results; sim/simulator_loops.cpp
// holds the loops that read the trace and run the events (one queue for the fleet, replicas in
// turn over windows of the trace, a closed loop).

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <queue>
#include <vector>

#include "sim/closed_loop.h"
#include "sim/memo.h"
#include "sim/node_store.h"
#include "sim/partition.h"
#include "sim/progress.h"
#include "sim/replica_windows.h"
#include "sim/router.h"
#include "sim/sim_events.h"
#include "sim/simulator.h"
#include "sim/timeline.h"
#include "sim/user_map.h"
#include "traces/record_stream.h"

namespace inferscale {

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
  std::vector<sim_events::StepChain> chains;  // by replica
  std::priority_queue<sim_events::Event, std::vector<sim_events::Event>, sim_events::EventAfter>
      heap{sim_events::EventAfter{&chains}};
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
       SimOutputs out, NextAccessFn next_access);

  void push(SimTime t, sim_events::EventKind kind, std::uint64_t arg) {
    // In windows, every event is a replica's (a kick or a step end; arg: the replica).
    (window_rows ? replica_heaps[arg] : heap).push(sim_events::Event{t, kind, seq++, arg});
  }

  /// Whether `r` comes after the facts declared at t = 0 (preload before it).
  static bool starts_clock(const TraceRecord& r) {
    return r.time() > 0 || (r.kind != RecordKind::kFact && r.kind != RecordKind::kHeader);
  }

  /// Before the first request or event: real executors receive the warm store's facts.
  bool preloaded = false;
  void preload();

  void kick(int rep, SimTime now) {
    if (replicas[rep]->busy() || kick_pending[rep]) return;
    kick_pending[rep] = 1;
    // Partitioned: a kick's order among kicks is the trace position of the record that queued
    // it, the same in every part (in one process, kicks are queued only by records then).
    if (partitioned || window_rows) {
      (window_rows ? replica_heaps[rep] : heap)
          .push(sim_events::Event{now, sim_events::kKick, record_index,
                                  static_cast<std::uint64_t>(rep)});
    } else {
      push(now, sim_events::kKick, static_cast<std::uint64_t>(rep));
    }
  }

  /// An idle replica (start_step returned -1) whose requests wait for asynchronous loads: a kick
  /// when the first of them is done.
  void wake_later(int rep, SimTime now) {
    const SimTime wake = replicas[rep]->wake_time();
    if (wake != kNever && wake > now)
      push(wake, sim_events::kKick, static_cast<std::uint64_t>(rep));
  }

  /// On a kick (insertion order `kick_seq`).
  void try_start(int rep, SimTime now, std::uint64_t kick_seq);

  void write_timeline(const Replica& r, const sim_events::StepChain& chain);

  FactId add_fact(const FactRecord& f, bool memory_write);

  /// encode_cost, memoized: facts repeat a few token counts and the price is a pure function.
  Memo<std::uint64_t, SimTime> encode_costs;
  SimTime recompute_cost(std::uint32_t tokens, std::uint32_t context_tokens);

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
  void on_fact(const FactRecord& f, bool at_start);

  void on_memory_write(FactId id, SimTime now);

  /// `ids`: the request's dense fact ids, best last.
  void issue(RequestId id, UserId user, SimTime now, std::uint32_t query_tokens,
             std::uint32_t output_tokens, const std::uint32_t* ids, std::size_t n,
             std::int64_t pos);

  /// Steps ending before this time that finish no request are fused (see on_step_done);
  /// kNoFusion: none.
  static constexpr SimTime kNoFusion = std::numeric_limits<SimTime>::min();
  SimTime fuse_before = kNoFusion;
  std::uint64_t fused_steps = 0;
  std::uint64_t decode_run_steps = 0;

  /// Fuses the step in flight (started at `now`, lasting `d`) when it may be, and then, while
  /// the replica ends and starts decode-only steps at once (Replica::run_decodes), the step it
  /// leaves in flight. True: `now` is the end of a fused step still to be finished.
  bool fuse_decodes(Replica& replica, int rep, SimTime& now, SimTime& d);

  void on_step_done(int rep, SimTime now);

  void handle(const sim_events::Event& e, SimTime now);

  // ---- closed loop --------------------------------------------------------------------------
  void issue_next(std::size_t u, SimTime now);

  void push_issue(const std::optional<ClosedLoop::Issue>& i) {
    if (i) push(i->time, sim_events::kIssue, i->user);
  }

  // ---- main loops ---------------------------------------------------------------------------
  /// The replica a record reaches before any event does (TraceAhead::ReachFn), for routers that
  /// route by the record alone.
  int reach(const TraceRecord& r, std::uint64_t nth);

  /// The progress line's figures: the facts declared until the first request, then the
  /// requests done and the simulated time.
  void show_progress(double fraction, SimTime now) {
    if (preloaded) {
      progress.update(fraction, metrics.completed(), now);
    } else {
      progress.update(fraction, facts.size());
    }
  }

  void run_open(RecordStream& reader, TraceRecord& first, bool have);

  // ---- replicas in turn, in windows of the trace ------------------------------------------
  // Where the replicas share nothing and a request's replica follows from its user
  // (partition_refusal: what partitioned runs need), each replica's records and events are its
  // own. The trace is then read a window at a time (its facts declared in trace order, as
  // run_open does), and each replica in turn runs its records and events up to the window's
  // end, so that its state stays in the processor's caches for a few hundred requests instead
  // of one. requests.csv's rows wait for the window's end and are written in the order one
  // queue would have handled their step ends (compare_order, as partitioned runs merge).
  using EventHeap = std::priority_queue<sim_events::Event, std::vector<sim_events::Event>,
                                        sim_events::EventAfter>;
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
  void run_replica(int rep, SimTime end, SimTime& now, std::uint64_t& tick, double fraction);

  void run_windows(RecordStream& reader, TraceRecord& rec, bool have);

  void run_closed(RecordStream& reader, TraceRecord& rec, bool have);

  RunSummary run();

  void close_outputs();

  RunSummary partial_summary();

  RunSummary summarize();
};

}  // namespace inferscale
