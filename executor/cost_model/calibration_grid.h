#pragma once
// @brief The calibration grid: synthetic, deterministic scheduler steps over the cost model's
// axes (prefill batch and tokens, injected facts k, present context, decode batch and context,
// fact encodes with CWE context, host loads and offloads), as step sequences that a stateful
// executor (the GPU one) can perform: requests are prefilled before they decode, facts are
// encoded before they are injected or offloaded, and everything is released at the end.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "executor/executor.h"
#include "executor/model_config.h"

namespace inferscale {

/// Sizes shared by every point's prompts.
struct CalibrationShape {
  std::uint32_t header_tokens = 64;  // prefix-cached header of every prompt
  std::uint32_t fact_tokens = 24;    // one retrieved fact (a LoCoMo fact is ~20-30 tokens)
  std::uint32_t chunk_tokens = 256;  // one piece of present context, injected from the bank
  std::uint32_t query_tokens = 16;   // the computed part of a decoder's prompt
  std::uint32_t bank_facts = 64;     // facts encoded once for injection (>= the largest k)
  std::uint32_t bank_chunks = 16;    // context pieces encoded once (>= the most chunks)
};

/// One grid point: what its measured step holds. Zero counts leave a component out.
struct CalibrationPoint {
  // Running requests that decode one token in the step; prompt = header + chunks + query.
  std::uint32_t decode_batch = 0;
  std::uint32_t decode_chunks = 0;
  // Requests prefilling `prefill_tokens` each. prefill_chunks == 0: a first (and last) chunk
  // that injects k facts now; > 0: a continuation chunk after that many context pieces (injected
  // in an unmeasured step before), nothing injected now.
  std::uint32_t prefill_batch = 0;
  std::uint32_t prefill_tokens = 0;
  std::uint32_t k = 0;
  std::uint32_t prefill_chunks = 0;
  // Fact encodes: `encodes` facts of encode_tokens after encode_context tokens (CWE).
  std::uint32_t encodes = 0;
  std::uint32_t encode_tokens = 0;
  std::uint32_t encode_context = 0;
  // Host -> GPU loads and GPU -> host offloads of facts of move_tokens each.
  std::uint32_t loads = 0;
  std::uint32_t offloads = 0;
  std::uint32_t move_tokens = 0;
  // Asynchronous host -> GPU loads of facts of move_tokens each (the copy lanes), and in the
  // same step a one-request prefill of query_tokens that injects the last of them, so that the
  // step ends when every copy is done (grid copy_lanes).
  std::uint32_t async_loads = 0;
  // With decode_batch > 0: the asynchronous loads are issued beside the first of `async_steps`
  // decode steps and move while they run; the step after them decodes and runs the injecting
  // prefill. With prefill_batch > 0 (first chunks; async_steps 1 without decodes): the
  // prefills run in that first step, beside the copies. The point's sample is the time of all
  // async_steps + 1 steps (grid copy_lanes: the lanes beside compute, as in a serving run).
  // 0: loads and prefill in one step.
  std::uint32_t async_steps = 0;
  // With async_loads: resident facts of move_tokens offloaded asynchronously in the step that
  // issues the loads (with async_steps, the sequence's first step), so that both lanes move at
  // once (grid copy_lanes: the profile's duplex).
  std::uint32_t async_offloads = 0;
  // With async_offloads: the offloaded facts are evicted in the same step (victims, as when a
  // full pool makes room), so that the loads take their blocks and each waits for the offload
  // that frees its blocks; they are loaded back in an unmeasured step after.
  bool offload_victims = false;

  /// "decode 64@2128 + prefill 4x512 k50 + encode 16x24 w128 + load 8x24", "async load 256x24",
  /// "decode 64@1616 + async load 1024x24 over 4 steps", "async load 256x24 + async offload
  /// 256x24", "async load 1024x24 + async offload 1024x24 victims", "decode 64@1616 + async
  /// load 1024x17 over 4 steps + async offload 1024x17 victims".
  std::string label(const CalibrationShape& shape) const;
};

struct CalibrationGrid {
  std::string name;  // small | full | full_mixed | copy_lanes
  CalibrationShape shape;
  std::vector<CalibrationPoint> points;
  /// The axes in words (recorded in the profile).
  std::string description;
};

/// Grid names make_calibration_grid accepts.
std::vector<std::string> calibration_grid_names();
/// The named grid (small: a few dozen points for tests and quick checks; full: the one a
/// profile is fitted on; copy_lanes: asynchronous loads, alone, beside decodes and beside
/// asynchronous offloads, for the profile's async_copies, not for the least-squares fit).
/// Throws std::invalid_argument for an unknown name.
CalibrationGrid make_calibration_grid(const std::string& name);

/// Held-out split: every 5th point (index % 5 == 4) is held out of the fit.
inline bool calibration_held_out(std::size_t point_index) {
  return point_index % 5 == 4;
}

/// One step of a sequence; only measured steps are timed. A measured step that `continues`
/// adds its time to the next measured step's: one sample is the sum of such a run of steps.
struct CalibrationStep {
  BatchPlan plan;
  bool measured = false;
  bool continues = false;
};

/// @brief Builds the step sequences: request and fact ids are fresh for every point, so one
/// executor runs the whole grid in order (preamble, each point, postamble).
class CalibrationPlanner {
 public:
  CalibrationPlanner(ModelConfig model, CalibrationShape shape);

  /// Encodes the bank of facts and context pieces that prompts inject, then warms up (the
  /// header is cached by the first prefill).
  std::vector<CalibrationStep> preamble();
  /// The point's steps with `measured` timed steps (warm-up included), then its clean-up.
  std::vector<CalibrationStep> steps(const CalibrationPoint& point, std::uint32_t measured);
  /// Frees the bank.
  std::vector<CalibrationStep> postamble();

 private:
  struct Prompt {
    RequestId request = 0;
    std::vector<std::pair<FactId, std::uint32_t>> facts;  // injected, in prompt order
    std::uint32_t computed = 0;                           // query tokens
    std::uint32_t prompt_tokens = 0;
  };
  Prompt prompt(std::uint32_t k_facts, std::uint32_t chunks, std::uint32_t computed,
                std::uint32_t variant);
  /// Appends a prefill item of `p` to `plan`: first chunk (injects) or continuation.
  void add_prefill(BatchPlan& plan, const Prompt& p, bool first_chunk, std::uint32_t computed_now,
                   bool last_chunk) const;
  FactId fresh_fact() { return next_fact_++; }

  ModelConfig model_;
  CalibrationShape shape_;
  RequestId next_request_ = 1;
  FactId next_fact_ = 1000000;
};

/// Bank ids: facts 1 .. bank_facts, context pieces 100001 .. 100000 + bank_chunks.
inline FactId calibration_bank_fact(std::uint32_t i) {
  return FactId(1 + i);
}
inline FactId calibration_bank_chunk(std::uint32_t i) {
  return FactId(100001 + i);
}

/// What a stateful executor must hold to run a grid (sized by walking its steps).
struct CalibrationNeeds {
  std::uint64_t cache_tokens = 0;  // KV cache rows live at once (prompts + encode scratch)
  std::uint64_t requests = 0;      // requests live at once (each also reserves decode rows)
  std::uint64_t pool_blocks = 0;   // fact blocks resident at once (16 tokens each)
  std::uint64_t host_facts = 0;    // facts held in the host tier at once
  std::uint64_t host_blocks = 0;   // their blocks (16 tokens each)
  std::uint32_t max_position = 0;  // largest composed position
  std::uint32_t decode_steps = 0;  // most decode steps of one request
  std::uint64_t steps = 0;         // steps in all (measured or not)
  std::uint64_t measured_steps = 0;

  /// Rows a request reserves past its prompt for its output.
  std::uint32_t decode_reserve_tokens() const { return decode_steps + 8; }
  /// KV cache rows for a stateful executor: prompts, decode reserves and encode scratch live at
  /// once, plus half again for the allocator's fragmentation.
  std::uint64_t cache_rows() const { return min_cache_rows() + live_rows() / 2; }
  /// The least of them: the rows live at once and 4,096 more, without the half again.
  std::uint64_t min_cache_rows() const { return live_rows() + 4096; }
  std::uint64_t live_rows() const { return cache_tokens + requests * decode_reserve_tokens(); }
  /// cache_rows(), or fewer where a device has less memory free: `free` bytes less `fixed` (the
  /// weights, fact pool and a workspace) over `row_bytes` a row, never below min_cache_rows();
  /// 0 when not even those fit.
  std::uint64_t cache_rows_within(std::uint64_t free, std::uint64_t fixed,
                                  std::uint64_t row_bytes) const {
    const std::uint64_t room = free > fixed ? (free - fixed) / row_bytes : 0;
    if (room < min_cache_rows()) return 0;
    return std::min(cache_rows(), room);
  }
  /// Rotary table rows: every position a step reaches.
  std::uint32_t positions() const { return max_position + decode_reserve_tokens() + 64; }
};
CalibrationNeeds calibration_needs(const CalibrationGrid& grid, const ModelConfig& model,
                                   std::uint32_t measured);

}  // namespace inferscale
