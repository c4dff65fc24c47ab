// Scheduler `fact_locality`: continuous batching whose admissions prefer, among the oldest
// waiting requests, the one with the fewest facts missing from the GPU store, so that requests
// whose facts are resident start before the store evicts them and misses' encodes wait.

#include <algorithm>

#include "sim/batch_scheduler.h"

namespace inferscale {

namespace {

class FactLocality final : public BatchScheduler {
 public:
  FactLocality(std::size_t window, std::uint64_t max_overtakes)
      : window_(window), max_overtakes_(max_overtakes) {}

  void plan_step(StepBuilder& steps) override {
    const bool prefilling = steps.plan_decodes();
    steps.plan_request_encodes();
    if (prefilling) steps.plan_prefills();
    while (steps.can_admit()) {
      const std::size_t pick = choose(steps);
      // A pick whose KV does not fit ends the admissions, as for the head: admitting smaller
      // requests past it would starve it.
      if (!steps.admit_waiting_at(pick)) break;
      if (pick != 0) ++overtakes_;
    }
    steps.plan_memory_writes();
  }

 private:
  /// Position of the request to admit next: the fewest misses among the first `window_`
  /// waiting, the oldest on ties; the head once it has been passed over max_overtakes_ times.
  std::size_t choose(const StepBuilder& steps) {
    const RequestId head = steps.waiting_id(0);
    if (!have_head_ || head != head_) {
      head_ = head;
      have_head_ = true;
      overtakes_ = 0;
    }
    if (overtakes_ >= max_overtakes_) return 0;
    const std::size_t n = std::min(window_, steps.waiting());
    std::size_t best = 0;
    std::uint32_t best_misses = steps.waiting_misses(0);
    for (std::size_t i = 1; i < n && best_misses > 0; ++i) {
      const std::uint32_t misses = steps.waiting_misses(i);
      if (misses < best_misses) {
        best = i;
        best_misses = misses;
      }
    }
    return best;
  }

  std::size_t window_;
  std::uint64_t max_overtakes_;
  RequestId head_ = 0;  // the oldest waiting request when last chosen
  bool have_head_ = false;
  std::uint64_t overtakes_ = 0;  // admissions that passed head_ over
};

}  // namespace

INFERSCALE_REGISTER_SCHEDULER(
    fact_locality,
    "continuous batching; admits first, among the oldest `window` waiting requests, the one "
    "with the fewest facts missing from the GPU store",
    {{"window", "16", "waiting requests compared at each admission (1: first come first served)"},
     {"max_overtakes", "8",
      "admissions that may pass over the oldest waiting request before it is admitted next"}},
    [](const Params& p) {
      return std::make_unique<FactLocality>(
          static_cast<std::size_t>(p.integer("window", 16, 1, 1 << 20)),
          static_cast<std::uint64_t>(p.integer("max_overtakes", 8, 0, 1 << 30)));
    });

}  // namespace inferscale
