#pragma once
// @brief Batch schedulers: what a replica puts in each step, chosen by `scheduler.name`. A
// scheduler composes a step from the replica's planning calls (StepBuilder); schedulers register
// themselves by name from their own file (sim/schedulers/, docs/schedulers.md).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "policies/params.h"
#include "traces/types.h"

namespace inferscale {

/// @brief The planning calls a replica offers its scheduler for one step. Each adds items to the
/// step's plan and spends the step's token budget (scheduler.max_batch_tokens); none exceeds it.
class StepBuilder {
 public:
  virtual ~StepBuilder() = default;

  /// Tokens of the step's budget not spent yet.
  virtual std::uint32_t budget() const = 0;
  /// One decode token per running request past its prefill, in admission order; on a full KV
  /// pool the latest admitted requests are preempted (back to the waiting queue's front).
  /// Returns whether a running request it reached is still in its prefill.
  virtual bool plan_decodes() = 0;
  /// Fact encodes that admitted requests wait for, first queued first, while they fit.
  virtual void plan_request_encodes() = 0;
  /// Prefill chunks of admitted requests whose facts are ready, in admission order (whole
  /// prefills only with scheduler.chunked_prefill off).
  virtual void plan_prefills() = 0;
  /// Admits waiting requests first come first served while KV memory, max_seqs and the budget
  /// allow (none in a step that preempted); each admission also plans what it can of its fact
  /// lookups, encodes and first prefill chunk.
  virtual void admit_waiting() = 0;
  /// Encodes of memory writes (new facts), first written first, with what is left.
  virtual void plan_memory_writes() = 0;

  // For schedulers that choose which waiting request to admit.
  /// Whether one more request may be admitted in this step (no preemption in it, a request
  /// waiting, fewer than max_seqs running, budget left).
  virtual bool can_admit() const = 0;
  /// Requests waiting for admission; position 0 is the oldest (or the latest preempted).
  virtual std::size_t waiting() const = 0;
  /// Id of the request at `position` of the waiting queue.
  virtual RequestId waiting_id(std::size_t position) const = 0;
  /// Facts of the request at `position` that are not resident in the GPU store now (all of
  /// its facts in text mode); reads the store without touching its policies.
  virtual std::uint32_t waiting_misses(std::size_t position) const = 0;
  /// Admits the request at `position` as admit_waiting does; false (nothing changed) when its
  /// KV does not fit. Call only when can_admit().
  virtual bool admit_waiting_at(std::size_t position) = 0;
};

/// @brief Composes each step of one replica. One instance per replica; it may keep state across
/// steps. Contract kept by the fused decode steps (Simulator): a step that only decodes every
/// running request, with nothing else queued, is followed by the same step while no request,
/// memory write or step end reaches the replica.
class BatchScheduler {
 public:
  virtual ~BatchScheduler() = default;
  /// Plans one step through `steps`; a step with nothing planned leaves the replica idle.
  virtual void plan_step(StepBuilder& steps) = 0;
};

/// One registered scheduler.
struct SchedulerInfo {
  std::string name;
  std::string description;
  std::vector<ParamInfo> params;
  std::function<std::unique_ptr<BatchScheduler>(const Params&)> factory;
};

/// @brief Name -> factory table (a function-local static: no static-initialisation-order trouble).
class SchedulerRegistry {
 public:
  static std::vector<SchedulerInfo>& all();
  static const SchedulerInfo* find(const std::string& name);
  /// Creates a scheduler; an unknown name throws InputError at `where` listing the known names,
  /// and so does a parameter it does not know.
  static std::unique_ptr<BatchScheduler> make(const std::string& name, const Params& params,
                                              const std::string& where);
};

struct SchedulerRegistrar {
  explicit SchedulerRegistrar(SchedulerInfo info) {
    SchedulerRegistry::all().push_back(std::move(info));
  }
};

}  // namespace inferscale

/// Registers a scheduler from its own file: INFERSCALE_REGISTER_SCHEDULER(continuous,
/// "description", {ParamInfo...}, factory). The schedulers are an OBJECT library, linked into
/// every program with the simulator, so the registration survives static linking.
#define INFERSCALE_REGISTER_SCHEDULER(id, description, ...)                        \
  static const ::inferscale::SchedulerRegistrar inferscale_scheduler_##id {        \
    ::inferscale::SchedulerInfo {                                                  \
#id, description, __VA_ARGS__                                                \
    }                                                                              \
  }
