// Scheduler `continuous` (the default): continuous batching with a token budget and chunked
// prefill, in the order that keeps running requests moving before new ones start.

#include "sim/batch_scheduler.h"

namespace inferscale {

namespace {

class Continuous final : public BatchScheduler {
 public:
  void plan_step(StepBuilder& steps) override {
    // Decodes first: a running request never waits for a new one. When no running request is
    // still in its prefill (and the decodes reached them all), there are no chunks to plan.
    const bool prefilling = steps.plan_decodes();
    steps.plan_request_encodes();
    if (prefilling) steps.plan_prefills();
    steps.admit_waiting();
    steps.plan_memory_writes();
  }
};

}  // namespace

INFERSCALE_REGISTER_SCHEDULER(continuous,
                              "continuous batching: decodes, waited-for fact encodes, prefill "
                              "chunks, admissions first come first served, memory writes",
                              {}, [](const Params&) { return std::make_unique<Continuous>(); });

}  // namespace inferscale
