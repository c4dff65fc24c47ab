#pragma once
// @brief The Executor interface: performs or prices one scheduler step (a BatchPlan) on one
// replica. The executor decides nothing; the simulator decided everything in the plan.

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "traces/types.h"

namespace inferscale {

/// One fact in a request's composed prompt: header + facts + footer + query.
struct PromptFact {
  FactId fact = 0;
  std::uint32_t tokens = 0;
  std::uint32_t position = 0;  // composed position of the fact's first token
  bool inject = true;          // KV injected from the store; false: inlined as text and prefilled
  /// KV already written into this request's cache by a FactEncode/FactLoad with `for_request`
  /// (the store did not admit it): neither gathered from the pool nor prefilled.
  bool private_kv = false;
};

inline constexpr RequestId kNoRequest = ~RequestId{0};

/// A (chunk of a) request prefill. Token ranges are in the request's *computed-token* space:
/// the tokens that must go through the model (everything in text mode; inline facts, footer and
/// query in kv_inject). The header is prefix-cached per replica and injected facts are copied.
struct PrefillItem {
  RequestId request = 0;
  UserId user = 0;
  std::uint32_t header_tokens = 0;
  std::uint32_t footer_tokens = 0;
  std::uint32_t query_tokens = 0;
  std::uint32_t facts_begin = 0, facts_end = 0;  // range in BatchPlan::prompt_facts
  std::uint32_t prompt_tokens = 0;               // header + all facts + footer + query
  std::uint32_t computed_total = 0;              // tokens of this prompt that must be computed
  std::uint32_t computed_done = 0;               // computed in earlier steps
  std::uint32_t computed_now = 0;                // computed in this step
  std::uint32_t present_tokens = 0;  // KV present before this chunk (cached/injected + done)
  bool header_cached = false;        // header KV reused from the replica's prefix cache
  bool first_chunk = false;          // inject the facts now
  bool last_chunk = false;           // sample the first output token
};

/// One decode step of one running request.
struct DecodeItem {
  RequestId request = 0;
  std::uint32_t context_tokens = 0;  // KV already present (prompt + generated so far)
};

/// Encode a fact's KV (Context-Window Encoding: after `context_tokens` tokens of the turns
/// before it, whose KV is discarded); the result goes to the GPU fact pool.
struct FactEncode {
  FactId fact = 0;
  UserId user = 0;
  std::uint32_t tokens = 0;
  std::uint32_t context_tokens = 0;
  bool store = true;  // false: not admitted to the store; KV goes to `for_request` only
  RequestId for_request = kNoRequest;  // store=false: write the KV into this request's cache,
  std::uint32_t position = 0;          // rotated to this composed position
  /// for_request: the request's prompt tokens. Its KV may arrive steps before its first chunk
  /// (the prefill waits for its other encodes or for token budget); the executor sets up the
  /// request's cache here then.
  std::uint32_t prompt_tokens = 0;
};

/// Copy a fact's KV between the host tier and the GPU pool (loads: host -> GPU; offloads:
/// GPU -> host).
struct FactLoad {
  FactId fact = 0;
  std::uint32_t tokens = 0;
  std::uint64_t bytes = 0;
  RequestId for_request = kNoRequest;  // loads only: GPU store full of pinned facts, so the KV
  std::uint32_t position = 0;          // goes straight into this request's cache at `position`
  std::uint32_t prompt_tokens = 0;     // for_request: as FactEncode::prompt_tokens
};

/// One scheduler step of one replica, performed in this order: offloads, async_offloads issued,
/// evictions, loads, async_loads issued, host_evictions, encodes, then one forward pass over
/// prefills and decodes, then released. A step whose pass needs none of its asynchronous copies
/// (executor/copy_order.h) may issue them, its evictions and its host evictions after launching
/// the pass. `async_loads` run on a copy engine beside this and later
/// steps (the step does not wait for them); the simulator plans the prefills that inject them for a
/// step that starts after they are done, and a real executor makes that step wait for them if they
/// are not. Reused between steps (clear() keeps capacity).
struct BatchPlan {
  int replica = 0;
  SimTime now = 0;
  std::vector<FactEncode> encodes;    // run first (memory writes, misses)
  std::vector<FactLoad> loads;        // host -> GPU
  std::vector<FactLoad> async_loads;  // host -> GPU pool beside the compute (never for_request)
  std::vector<FactLoad> offloads;     // copy GPU pool -> host tier (before evictions)
  /// GPU pool -> host tier beside the compute (victims of async_loads); a copy that writes into
  /// the blocks they free (an asynchronous load, or any later write) waits for them.
  std::vector<FactLoad> async_offloads;
  std::vector<FactId> evictions;       // free from the GPU pool (before encodes/loads)
  std::vector<FactId> host_evictions;  // drop from the host tier (after loads)
  std::vector<PromptFact> prompt_facts;
  std::vector<PrefillItem> prefills;
  std::vector<DecodeItem> decodes;
  std::vector<RequestId> released;  // requests finished or preempted: free their KV

  void clear() {
    encodes.clear();
    loads.clear();
    async_loads.clear();
    offloads.clear();
    async_offloads.clear();
    evictions.clear();
    host_evictions.clear();
    prompt_facts.clear();
    prefills.clear();
    decodes.clear();
    released.clear();
  }
  bool empty() const {
    return encodes.empty() && loads.empty() && async_loads.empty() && prefills.empty() &&
           decodes.empty() && offloads.empty() && async_offloads.empty() && evictions.empty() &&
           host_evictions.empty() && released.empty();
  }
};

/// Time per phase of a step, in ns (what the step's time is made of).
struct PhaseTimes {
  SimTime encode_ns = 0;
  SimTime load_ns = 0;
  SimTime inject_ns = 0;
  SimTime prefill_ns = 0;
  SimTime decode_ns = 0;
  SimTime overhead_ns = 0;
};

/// Host time an executor spent issuing asynchronous copies, and how many it issued.
struct CopyIssue {
  std::int64_t ns = 0;
  std::uint64_t copies = 0;
};

struct BatchResult {
  SimTime duration_ns = 0;
  PhaseTimes phases;
  /// One token per last_chunk prefill, then one per decode item, in plan order (real executors).
  std::vector<std::int32_t> tokens;
};

/// @brief An executor could not perform a step (server gone, timeout, device failure): the run
/// fails and keeps what it measured. The message says where ("host:port: what happened").
class ExecutorFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// @brief Performs or prices one step. Implementations: cost model, GPU, remote.
class Executor {
 public:
  virtual ~Executor() = default;
  virtual BatchResult execute(const BatchPlan& plan) = 0;
  virtual std::string name() const = 0;
  /// Optional fast path for runs of decode-only steps, performing nothing: durations_ns[j] is
  /// the duration_ns that execute() gives every plan of `decodes` decode items (and nothing else
  /// but released ids) whose context_tokens sum to `context_tokens` + j * `decodes`. False where
  /// the executor cannot say without the plan (the default; durations_ns is then unspecified).
  virtual bool price_decodes(std::uint32_t decodes, std::uint64_t context_tokens,
                             std::span<SimTime> durations_ns) const {
    (void)decodes;
    (void)context_tokens;
    (void)durations_ns;
    return false;
  }
};

}  // namespace inferscale
