#pragma once
// @brief The real executor: performs a BatchPlan on a Llama-family model in libtorch (CUDA, or
// the CPU for tests), with the fact pool, Chunked RoPE injection and Context-Window Encoding.

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "executor/executor.h"
#include "executor/gpu/device_ops.h"
#include "executor/gpu/fact_pool.h"
#include "executor/gpu/forward_batch.h"
#include "executor/gpu/host_tier.h"
#include "executor/gpu/llama_model.h"
#include "executor/gpu/prompt_layout.h"
#include "executor/gpu/slot_allocator.h"
#include "executor/gpu/token_source.h"
#include "executor/gpu/weights.h"
#include "executor/model_config.h"
#include "executor/row_padding.h"

namespace inferscale {

class HostTrace;

/// How fact keys are stored: before RoPE and rotated once at their composed positions
/// (bit-identical to a native prefill), or after RoPE at their encode positions and shifted by
/// the position delta (a second rounding).
enum class RopeMode { kPreRope, kDelta };

struct GpuExecutorOptions {
  ModelConfig model;
  std::string device = "cuda";                // cuda | cpu
  DType dtype = DType::kBF16;                 // the CPU path is meant for kF32
  std::uint64_t pool_bytes = 1ull << 30;      // fact blocks (the store's GPU tier)
  std::uint32_t reserved_pool_tokens = 4096;  // header KV and per-request (not admitted) facts
  /// Host-tier bytes allocated (page-locked) at construction; 0: as the tier grows. Pinning
  /// host memory stalls the device, so a tier that grows inside a measured step makes that
  /// step's host loads and offloads far slower than PCIe (bench/results/headline_hil.md).
  std::uint64_t host_bytes = 0;
  std::uint32_t kv_cache_tokens = 32768;     // KV cache rows for running requests and encodes
  std::uint32_t decode_reserve_tokens = 64;  // rows reserved past a prompt for its output
  std::int32_t rope_positions = 0;           // rotary table rows; 0: min(max_positions, 32768)
  RopeMode rope = RopeMode::kPreRope;
  /// The format fact KV is kept in (store.kv_dtype): each encoded fact's KV is stored in it and
  /// loaded back before any request reads it; the model computes in `dtype`.
  KvFormat fact_kv = KvFormat::kNative;
  std::uint64_t seed = 0;
  std::uint32_t max_batch_tokens = 16384;  // encodes are run in forwards of at most this
  bool keep_logits = false;                // keep each step's logits (tests)
  /// warm_up() also runs every matrix product of the model once for each row count 1..warm_rows
  /// (LlamaModel::warm_products; capped at max_batch_tokens), so that a step with a row count
  /// not seen before does not pay the BLAS libraries' first choice for it. 0: off.
  std::uint32_t warm_rows = 0;
  /// With warm_rows > 0, a forward pass of more than warm_rows tokens is padded to a multiple of
  /// row_bucket (ForwardBatch::pad, into row_bucket - 1 cache rows kept for it) and warm_up()
  /// also warms those multiples up to max_batch_tokens, so that no step meets a new row count.
  /// 0 or 1: no padding.
  std::uint32_t row_bucket = 64;
  /// Before the first step with prefills (the start of serving, after any encode-only steps
  /// such as a store filled before the run), forward passes of up to 1,024 rows for this many
  /// milliseconds, not measured. On an H200 the first prefill wave after the pre-run encodes of
  /// a warm store measured 12 % more than the same wave later, with the device idle for only
  /// 0.2 ms before it; 200 ms of passes removed it (bench/results/headline_hil.md). 0: off.
  double settle_ms = 0;
  /// A step whose forward pass needs none of its asynchronous copies (executor/copy_order.h)
  /// launches the pass first and issues the copies while the device runs it; false: the copies
  /// first, as every step did before 0337801.
  bool copies_beside_pass = true;
  /// Megabytes (MiB) of asynchronous copies each copy lane keeps queued on its copy engine before
  /// it waits for older ones (CUDA), so that a step's own small transfers never queue behind
  /// seconds of bulk copies and loads and offloads advance side by side. At least 1.
  std::uint32_t copy_inflight_mb = 64;
  SplitKvPolicy split_kv;       // split-KV attention where it pays; enabled = A/B
  CudaGraphPolicy cuda_graphs;  // forwards of recurring shapes as CUDA graphs (CUDA)
  BlasPolicy blas;              // cuBLAS or cuBLASLt per product (CUDA)
  /// Programmatic dependent launch for the layer's custom kernels (CUDA, process-wide;
  /// use_programmatic_launch()). On by default: 0.07-0.3 ms faster kv_inject steps at batch 1
  /// and 16 on the H200 (bench/results/pdl/README.md), bit-identical results.
  bool programmatic_launch = true;
  std::shared_ptr<TokenSource> tokens;    // null: SyntheticTokenSource(vocab, seed)
  std::shared_ptr<WeightLoader> weights;  // null: RandomWeightLoader(seed)
};

class GpuExecutor : public Executor {
 public:
  explicit GpuExecutor(GpuExecutorOptions options);
  ~GpuExecutor() override;

  BatchResult execute(const BatchPlan& plan) override;
  std::string name() const override;

  /// What the last step did (for benchmarks and tests).
  struct StepStats {
    std::uint64_t injected_tokens = 0;  // gathered from the pool into request caches
    std::uint64_t computed_tokens = 0;  // prefill and decode tokens of the forward pass
    std::uint64_t encoded_tokens = 0;   // fact and context tokens of encodes (and headers)
    std::uint64_t load_fallbacks = 0;   // loads of facts the host tier did not hold (encoded)
    AttentionCounts attention;          // attention calls (one per layer and forward) by kind
    std::uint64_t graph_replays = 0;    // forwards run as a CUDA graph replay
    /// Device idle time before this step, counted in its duration because asynchronous loads
    /// were in flight (they progressed while the virtual clock stood still).
    std::int64_t copy_gap_ns = 0;
  };
  const StepStats& last_stats() const { return stats_; }

  FactPool& pool() { return *pool_; }
  const LlamaModel& model() const { return *model_; }
  DeviceOps& ops() { return *ops_; }
  const GpuExecutorOptions& options() const { return options_; }
  /// Logits of the last step's samples, [samples, vocab] fp32 on the CPU (keep_logits only).
  const at::Tensor& last_logits() const { return last_logits_; }
  /// K and V of a running request's composed positions [0, n): [layers, n, kv_heads, head_dim].
  std::pair<at::Tensor, at::Tensor> request_kv(RequestId request, std::uint32_t n) const;
  /// One layer's keys of a running request's positions [0, n), on the device (a view of the
  /// cache, valid until the request is released): [n, kv_heads, head_dim].
  at::Tensor request_keys(RequestId request, std::uint32_t layer, std::uint32_t n) const;
  /// Logits [vocab] (fp32, CPU) of the last token after a native prefill of `tokens` at
  /// positions 0.. in a scratch range of the cache (nothing is kept).
  at::Tensor prefill_logits(const std::vector<std::int32_t>& tokens);
  /// Runs the one-time work of a fresh executor (library handles, first launches, allocator
  /// growth, the products of warm_rows, the copy lanes of a host tier) outside any step, so
  /// that the first measured step costs what later ones do.
  void warm_up();
  /// Computes the shared header of `tokens` tokens into the pool's reserved area now (outside
  /// any step) if it is not there; steps that name it reuse it.
  void prepare_header(std::uint32_t tokens);
  /// Sum of StepStats::copy_gap_ns over the executor's life.
  std::int64_t total_copy_gap_ns() const { return total_copy_gap_ns_; }
  /// Host time spent issuing asynchronous copies (offloads and loads, the compute stream idle
  /// meanwhile) and the number issued, over the executor's life: the calibration's issue_ns.
  CopyIssue copy_issue() const { return copy_issue_; }
  /// Whether the host tier holds a fact.
  bool host_has(FactId fact) const { return host_tier_->find(fact) != nullptr; }

 private:
  struct RequestState {
    std::int32_t region_start = 0;
    std::int32_t capacity = 0;
    std::uint32_t prompt_tokens = 0;
    std::uint32_t computed_done = 0;
    std::uint32_t next_position = 0;  // decode: position of the next input token
    std::int32_t last_token = 0;      // decode: the next input token
    bool prefilled = false;
    bool awaiting_first_chunk = false;  // set up by per-request KV that came before the prompt
    // The prompt's layout from its first chunk: the simulator lists a prompt's facts only
    // there (BatchPlan::prompt_facts), later chunks of a chunked prefill name none.
    std::vector<PromptPiece> layout;
  };
  /// Host-side lists for one fused inject launch.
  struct Injections {
    std::vector<std::int32_t> src, dst, pos;
  };
  struct PendingEncode {
    FactId fact;
    std::uint32_t tokens, context_tokens;
    bool store;
    RequestId for_request;
    std::uint32_t position;
    std::uint32_t prompt_tokens;
  };

  // gpu_executor_kv.cpp: pool, host tier, encodes, injection
  /// Before a fact's pool or host blocks are freed or read again: wait for its asynchronous
  /// load if one may still run.
  void settle(FactId fact);
  /// Before a write on the compute stream into pool blocks: wait for every asynchronous offload.
  void settle_offloads();
  void issue_async_offloads(const std::vector<FactLoad>& offloads);
  void issue_async_loads(const std::vector<FactLoad>& loads, Injections& inj,
                         std::vector<PendingEncode>& fallback);
  void offload(FactId fact);
  void load(const FactLoad& load, Injections& inj, std::vector<PendingEncode>& fallback);
  void ensure_header(std::uint32_t tokens, Injections& inj);
  void run_encodes(const std::vector<PendingEncode>& encodes, Injections& inj);
  void add_injection(const FactPool::Entry& e, RequestId request, std::uint32_t position,
                     Injections& inj);
  /// The lists on the device (one upload), then the fused launch.
  at::Tensor upload_injections(const Injections& inj);
  void launch_injections(const Injections& inj, const at::Tensor& uploaded);
  std::uint64_t transient_key();
  /// A reserved entry for this step only; when the reserved area is full, the step's pending
  /// injections run first and free their transients.
  const FactPool::Entry& allocate_transient(std::uint32_t tokens, std::int32_t encode_position,
                                            Injections& inj);
  void flush_injections(Injections& inj);
  void free_transients();

  // gpu_executor_step.cpp: the phases of execute(), in their order
  /// The clock's marks of one step (-1: not taken).
  struct StepMarks {
    int start = -1, load = -1, encode = -1, inject_begin = -1, inject_end = -1;
    int pass = -1;  // the pass's end, when copies are issued after its launch
    int forward = -1;
  };
  /// Host evictions of facts this step neither offloads nor loads, at once (the offloads reuse
  /// their blocks); returns the others, for evict_late_from_host once the copies are issued.
  std::vector<FactId> evict_untouched_from_host(const BatchPlan& plan);
  void evict_late_from_host(const std::vector<FactId>& facts);
  /// The asynchronous offloads, the evictions, the loads and the asynchronous loads; `fallback`
  /// receives the encodes of loads whose KV the host tier does not hold.
  void issue_copies(const BatchPlan& plan, Injections& into, std::vector<PendingEncode>& fallback,
                    HostTrace& trace);
  /// A prefill that injects an asynchronously loaded fact waits for its copy.
  void wait_for_injected_loads(const BatchPlan& plan);
  /// Cached headers, then the plan's encodes after `encodes` (the loads' fallbacks).
  void run_step_encodes(const BatchPlan& plan, std::vector<PendingEncode>& encodes,
                        Injections& inj);
  /// Each prefill's prompt layout; a first chunk's injected header and facts into `inj`.
  void compose_prompts(const BatchPlan& plan, Injections& inj);
  /// Every prefill chunk's computed tokens and every decode item into `batch`, then padding.
  void add_forward_items(const BatchPlan& plan, ForwardBatch& batch);
  /// The one forward pass (a CUDA graph replay where it may be); the sampled tokens on the
  /// host (undefined where nothing is sampled), valid after the clock's synchronize().
  at::Tensor run_forward_pass(const ForwardBatch& batch, HostTrace& trace);
  /// The step's duration and phases from its marks (after synchronize()), with the device's
  /// idle `gap` before it where copies were in flight; fills stats_.
  BatchResult measure_step(const BatchPlan& plan, const StepMarks& marks, std::int64_t gap,
                           const AttentionCounts& calls_before, std::uint64_t replays_before);
  /// Request state advanced by the sampled `tokens` (prefills', then decodes'); released
  /// requests' cache rows freed.
  void advance_requests(const BatchPlan& plan, const std::vector<std::int32_t>& tokens);
  void trace_step(HostTrace& trace, const BatchPlan& plan, std::int64_t gap,
                  const BatchResult& result);

  // gpu_executor.cpp: requests and the forward pass
  RequestState& start_request(const PrefillItem& item);
  /// The request that per-request KV goes to: running, or set up now from `prompt_tokens`.
  RequestState& private_target(RequestId request, std::uint32_t prompt_tokens);
  RequestState& new_request(RequestId request, std::uint32_t prompt_tokens);
  RequestState& state(RequestId request);
  void grow_region(RequestState& s, std::uint32_t rows);
  std::int32_t alloc_rows(std::int32_t rows);
  /// One sequence of `ids` through the model outside any step, in cache rows from `start` at
  /// positions from `position` (no pool, one sampled row); its logits.
  at::Tensor scratch_forward(std::int32_t start, std::int32_t position,
                             const std::vector<std::int32_t>& ids);
  /// Forward passes for options_.settle_ms (see GpuExecutorOptions::settle_ms).
  void settle_device();
  /// Pads `batch` to a multiple of options_.row_bucket when it has more than warm_rows tokens.
  void pad(ForwardBatch& batch) const;
  std::vector<std::int32_t> piece_tokens(const PromptPiece& piece, RequestId request);
  void check_position(std::int64_t position) const;

  GpuExecutorOptions options_;
  std::unique_ptr<DeviceOps> ops_;
  std::shared_ptr<TokenSource> tokens_;
  std::unique_ptr<LlamaModel> model_;
  std::unique_ptr<FactPool> pool_;
  KvCache cache_;
  SlotAllocator rows_;
  std::unordered_map<RequestId, RequestState> requests_;
  std::unique_ptr<HostTier> host_tier_;
  std::vector<std::uint64_t> transients_;  // reserved pool entries freed at the end of a step
  std::uint64_t next_transient_ = 0;
  StepStats stats_;
  at::Tensor last_logits_;
  /// Facts whose asynchronous loads no step has waited for yet, with their copy tickets.
  std::unordered_map<FactId, std::uint64_t> pending_loads_;
  bool copies_in_flight_ = false;  // at the end of the last step
  bool settled_ = false;           // options_.settle_ms ran (before the first prefill step)
  /// By pool block: the ticket of the last asynchronous offload that read it (a later write
  /// waits for it); by fact: the ticket of the offload that wrote its host copy.
  std::vector<std::uint64_t> block_offload_ticket_;
  std::unordered_map<FactId, std::uint64_t> host_write_ticket_;
  std::uint64_t last_offload_ticket_ = 0;
  std::uint64_t last_load_ticket_ = 0;
  std::int64_t total_copy_gap_ns_ = 0;
  CopyIssue copy_issue_;
  /// INFERSCALE_HOST_TRACE only: the step's host time issuing asynchronous offloads, by part
  /// (batch begins, settles of pending loads, host-tier stores, batch ends, ticket records), ns.
  struct OffloadIssueParts {
    bool on = false;
    std::int64_t begin = 0, settle = 0, store = 0, end = 0, tickets = 0;
  } offload_parts_;
  RowPadding padding_;                // pad()'s rule (warm_rows, row_bucket)
  std::int32_t pad_rows_start_ = -1;  // cache rows of pad()'s segments; -1: no padding
};

}  // namespace inferscale
