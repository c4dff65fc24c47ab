#pragma once
// @brief CopyEngineModel: the asynchronous host-tier copies of a step (BatchPlan::async_loads and
// async_offloads) as the GPU executor runs them beside the compute, in virtual time, so that a
// cost model can price what a step waits for.
//
// The GPU executor (executor/gpu/gpu_executor_kv.cpp) issues a step's asynchronous offloads, then
// its loads, to two copy lanes (device -> host, host -> device), each a queue of batches of
// `batch_facts` facts with a ticket; a lane runs its batches one after another in issue order. A
// load batch first waits for the offload batches of the evicted facts whose blocks it takes (the
// step frees its evictions in reverse, so the first loads take the first victims' blocks; an
// offload of a fact that stays resident holds no load back), and a prefill that
// injects a loaded fact waits for its batch's ticket before the step's forward pass. The model
// follows that: a batch's work is its facts' copy time alone (`fact_ns` + `block_ns` per 16-token
// block + bytes / rate: the executor copies a fact block by block), and while
// both lanes move bytes each runs at `duplex` of its rate alone (the link and the host memory are
// shared). The step itself pays the host time to issue its copies (`issue_ns` each: the compute
// stream idles meanwhile; a batch reaches its lane once the host has issued it) and, when its
// forward pass starts while copies still move, a fixed `stall_ns`; a step whose pass needs none
// of its copies (executor/copy_order.h) issues them while the pass runs instead. The parameters and
// how they were measured: executor/cost_model/README.md.

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

#include "executor/executor.h"

namespace inferscale {

/// @brief The copy lanes' rates and the executor's batching.
struct CopyEngineParams {
  double bytes_per_ns = 0;  // one lane's rate while the other is idle
  double fact_ns = 0;       // per fact copied, besides its bytes
  double block_ns = 0;      // per 16-token block copied (the executor copies block by block)
  double duplex = 1;        // each lane's rate while both move, as a fraction of bytes_per_ns
  double issue_ns = 0;      // host time a step spends issuing one asynchronous copy
  /// Added to a step whose forward pass starts while copies are in flight, ns.
  double stall_ns = 0;
  std::uint32_t batch_facts = 16;  // facts per batch (one ticket each)
};

/// @brief Two copy lanes in virtual time: issue a step's asynchronous copies, then ask when the
/// loads its prefills inject are done.
class CopyEngineModel {
 public:
  explicit CopyEngineModel(CopyEngineParams params);

  /// Issues `plan`'s async_offloads, then its async_loads, at `now` (ns). Returns the host time
  /// the step spends issuing them (issue_ns per copy); a batch may start once the host has
  /// issued it and every copy before it (issue_ns x those copies after `now`).
  SimTime issue(const BatchPlan& plan, SimTime now);
  /// When every asynchronous load that a first chunk of `plan` injects is done (>= `now`; `now`
  /// when none is pending). Forgets the loads it waited for.
  SimTime ready(const BatchPlan& plan, SimTime now);
  /// Whether a copy is still moving (or queued) at `t` (>= the last time asked).
  bool busy_at(SimTime t);
  /// Loads issued and not yet known done (by fact).
  std::size_t pending_loads() const { return pending_.size(); }
  const CopyEngineParams& params() const { return params_; }

 private:
  struct Batch {
    std::uint64_t ticket = 0;
    double work_ns = 0;       // copy time left at the lane's rate alone
    SimTime issued = 0;       // when it may start
    std::uint64_t after = 0;  // a ticket of the other lane it waits for (0: none)
  };
  enum Lane { kToDevice = 0, kToHost = 1 };

  /// Tickets of a lane are 2 * n + lane, increasing in issue order: a lane runs its batches in
  /// that order, so a ticket is done when its lane's last done ticket is at least it.
  static Lane lane_of(std::uint64_t ticket) { return Lane(ticket & 1); }
  bool done(std::uint64_t ticket) const {
    return ticket == 0 || ticket <= last_done_[lane_of(ticket)];
  }
  std::uint64_t push(Lane lane, double work_ns, SimTime issued, std::uint64_t after);
  /// Runs the lanes until `ticket` is done (or, with ticket 0, until `until` or both lanes are
  /// empty); returns the lanes' clock then (ns).
  double run(std::uint64_t ticket, double until = 0);
  double copy_ns(const FactLoad& f) const {
    return params_.fact_ns + params_.block_ns * double(blocks_of(f.tokens)) +
           double(f.bytes) / params_.bytes_per_ns;
  }
  /// The copy time on a lane alone of the batch of `facts` that starts at `begin`; adds its
  /// bytes to `*bytes` (where given), fact by fact.
  double batch_ns(const std::vector<FactLoad>& facts, std::size_t begin,
                  double* bytes = nullptr) const;

  CopyEngineParams params_;
  std::deque<Batch> lanes_[2];
  double clock_ = 0;  // the lanes' state is known up to here
  std::uint64_t batches_ = 0;
  std::uint64_t last_done_[2] = {0, 0};
  std::unordered_map<FactId, std::uint64_t> pending_;  // loaded fact -> its batch's ticket
  /// Scratch of issue(): each offloaded fact's batch ticket and bytes; for each evicted fact in
  /// the plan's order, the loaded bytes where its blocks start and the ticket they wait for.
  std::unordered_map<FactId, std::pair<std::uint64_t, std::uint64_t>> offload_ticket_;
  std::vector<std::pair<double, std::uint64_t>> freed_;
};

}  // namespace inferscale
