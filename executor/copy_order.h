#pragma once
// @brief When a step's asynchronous copies may follow its forward pass's launch: the rule the GPU
// executor and the calibrated cost model share.

#include <algorithm>
#include <vector>

#include "executor/executor.h"

namespace inferscale {

/// Whether nothing of `plan`'s forward pass needs its asynchronous copies (async_offloads,
/// evictions, async_loads): no synchronous load and no encode in the step (they take pool blocks
/// that the evictions free, after the offloads that copy them out), and no first chunk injecting
/// a fact loaded asynchronously or evicted in this very step. The GPU executor then launches the
/// pass first and issues those copies while the device runs it, so that the host's time issuing
/// thousands of copies (a population's first step) no longer holds the pass back; the copies still
/// follow the compute work issued before the step's pass.
inline bool copies_follow_forward(const BatchPlan& plan) {
  if (plan.async_loads.empty() && plan.async_offloads.empty()) return false;
  if (!plan.loads.empty() || !plan.encodes.empty()) return false;
  // The facts the step's first chunks inject: none may be loaded or evicted by the copies moved
  // after the pass (an eviction of one is refused, before any copy, in the documented order).
  std::vector<FactId> injected;
  for (const PrefillItem& p : plan.prefills) {
    if (!p.first_chunk) continue;
    for (std::uint32_t i = p.facts_begin; i < p.facts_end && i < plan.prompt_facts.size(); ++i) {
      injected.push_back(plan.prompt_facts[i].fact);
    }
  }
  if (injected.empty()) return true;
  std::sort(injected.begin(), injected.end());
  auto in_pass = [&](FactId f) { return std::binary_search(injected.begin(), injected.end(), f); };
  for (const FactLoad& l : plan.async_loads) {
    if (in_pass(l.fact)) return false;
  }
  for (FactId f : plan.evictions) {
    if (in_pass(f)) return false;
  }
  return true;
}

}  // namespace inferscale
