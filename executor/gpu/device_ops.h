#pragma once
// @brief What differs between running the model on the CPU and on a CUDA GPU: the custom ops
// (CPU references vs CUDA kernels, both on the same parameter structs), attention (batched math
// vs varlen flash), host-to-device index uploads and step timing (wall clock vs CUDA events).

#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/params.h"

namespace inferscale {

/// Segments of one varlen attention call. Segment s's queries are rows cu_q[s] .. cu_q[s+1] of
/// q; its keys are cache rows k_start[s] .. k_start[s] + k_used[s]; query i of n attends keys
/// 0 .. k_used - n + i (causal, aligned to the end). Segments are sorted by k_start.
struct AttentionBatch {
  std::int32_t segments = 0, max_q = 0, max_k = 0;
  at::Tensor cu_q;     // [segments + 1] int32, on the compute device
  at::Tensor k_start;  // [segments + 1] int32 (last entry: cache rows), on the compute device
  at::Tensor k_used;   // [segments] int32, on the compute device
  std::vector<std::int32_t> host_cu_q, host_k_start, host_k_used;  // the same, on the host
};

/// When a forward's attention runs split-KV (kernels/split_kv_attention.cu on CUDA, its reference
/// on the CPU) instead of varlen flash (CUDA) or batched math (CPU): every segment at most
/// `max_query_tokens` long and some segment's context at least `min_context_tokens`, where
/// splitting the keys fills the GPU that one block per query tile and head cannot. A forward
/// whose short segments qualify but that also holds longer ones (decodes next to a prefill
/// chunk) runs two calls: split-KV on the short segments, the other path on the rest
/// (ForwardBatch::finalize).
struct SplitKvPolicy {
  bool enabled = true;                    // the A/B switch
  std::int32_t max_query_tokens = 64;     // longest segment (queries)
  std::int32_t min_context_tokens = 256;  // longest context (keys)
  std::int32_t min_chunk_tiles = 1;       // shortest key split, in 64-key tiles (split_kv_plan)
};

/// Whether `policy` sends an attention batch to split-KV (shape only; the CUDA ops also need
/// the kernel to accept dtype, head_dim and alignment).
bool split_kv_wanted(const SplitKvPolicy& policy, const AttentionBatch& batch);

/// Attention calls by implementation, since the ops were made.
struct AttentionCounts {
  std::uint64_t split_kv = 0, flash = 0, math = 0;
};

/// Which BLAS library libtorch's matrix products use on CUDA (libtorch's preference is
/// process-wide; the CUDA ops set it before each product). cuBLAS splits K of a product of a few
/// dozen rows over blocks and adds a reduction kernel; cuBLASLt reads such products' weights
/// faster, and is slower on some larger shapes (bench/results/blas/README.md). kFewRowsLt (the
/// default) takes products of at most `lt_max_rows` rows (query-only prefills, decode steps) to
/// cuBLASLt and the rest to cuBLAS. The CPU ignores it.
enum class BlasLibrary { kCublas, kCublasLt, kFewRowsLt };
struct BlasPolicy {
  BlasLibrary library = BlasLibrary::kFewRowsLt;
  std::int32_t lt_max_rows = 64;
};
inline const char* blas_library_name(BlasLibrary library) {
  switch (library) {
    case BlasLibrary::kCublasLt:
      return "cublaslt";
    case BlasLibrary::kFewRowsLt:
      return "cublaslt_few_rows";
    case BlasLibrary::kCublas:
      break;
  }
  return "cublas";
}

/// Matrix products by implementation, since the ops were made; blas_lt of blas on cuBLASLt.
struct GemmCounts {
  std::uint64_t blas = 0, blas_lt = 0;
};

/// When a forward pass runs as a CUDA graph (DeviceOps::run_forward): a pass of at most
/// `max_tokens` tokens whose shape was seen in an earlier step is captured once (that step runs
/// it eagerly beside the capture) and replayed from then on, so its few hundred small kernels
/// launch as one. With it on, a pass's longest context (AttentionBatch::max_k) is rounded up to
/// a multiple of `key_bucket` so that the decode steps of a batch share one shape. At most
/// `max_graphs` graphs are kept (least recently used dropped), each holding its pass's
/// activations; max_graphs = 0 runs every pass eagerly with the same shapes (tests). Off by
/// default: the calibration and hardware-in-the-loop runs measure eager steps. The CPU ignores it.
struct CudaGraphPolicy {
  bool enabled = false;
  std::int32_t max_tokens = 256;
  std::int32_t max_graphs = 16;
  std::int32_t key_bucket = 256;
};

/// @brief Ordered marks on the compute stream; elapsed times are read after synchronize().
class StepClock {
 public:
  virtual ~StepClock() = default;
  /// Starts a new step: forgets earlier marks.
  virtual void reset() = 0;
  /// Records a mark now (in stream order); returns its index.
  virtual int mark() = 0;
  /// Waits for everything issued so far on the compute stream, marked or not.
  virtual void synchronize() = 0;
  /// Nanoseconds between two marks (after synchronize()).
  virtual std::int64_t elapsed_ns(int from, int to) = 0;
  /// Nanoseconds the device stood idle between the previous step's last mark and this step's
  /// first (after synchronize()); -1 where not measured (the CPU, or the first step).
  virtual std::int64_t gap_ns() { return -1; }
};

/// @brief The per-device implementation of the model's custom ops.
class DeviceOps {
 public:
  virtual ~DeviceOps() = default;
  virtual void kv_append(const KvAppendParams& p) = 0;
  virtual void kv_inject(const InjectParams& p) = 0;
  virtual void rms_norm(const RmsNormParams& p) = 0;
  virtual void silu_mul(const SiluMulParams& p) = 0;
  virtual void argmax(const ArgmaxParams& p) = 0;
  /// Greedy sampling: each row's argmax (the first maximum, as at::argmax) of logits [rows,
  /// vocab], as int32 [rows] on the logits' device, by argmax() (kernels/argmax.cu).
  at::Tensor argmax_rows(const at::Tensor& logits);
  /// Causal GQA attention: q [tokens, heads, head_dim]; k, v [cache_rows, kv_heads, head_dim]
  /// (one layer of the KV cache). Returns [tokens, heads, head_dim].
  virtual at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const AttentionBatch& batch, double scale) = 0;
  /// x w^T: x [rows, in], w [out, in] (a linear layer's weight). libtorch's matrix product (the
  /// CUDA ops pick its BLAS library by BlasPolicy).
  virtual at::Tensor linear(const at::Tensor& x, const at::Tensor& w) {
    ++gemm_counts_.blas;
    return at::mm(x, w.t());
  }
  /// y += x w^T in place (a residual add), rounded once.
  virtual void linear_add(at::Tensor& y, const at::Tensor& x, const at::Tensor& w) {
    ++gemm_counts_.blas;
    y.addmm_(x, w.t());
  }
  /// A host int32 vector as a tensor on the compute device (one copy; asynchronous on CUDA).
  virtual at::Tensor upload(const std::vector<std::int32_t>& host) = 0;
  /// A host copy of a device tensor that stays valid until the step is synchronized.
  virtual at::Tensor to_host(const at::Tensor& t) = 0;
  virtual StepClock& clock() = 0;

  /// A copy between the fact pool and the host tier: `rows` rows of `row_bytes`, the rows
  /// `pitch` bytes apart in both source and destination (one row: a plain copy).
  struct CopyRegion {
    void* dst = nullptr;
    const void* src = nullptr;
    std::size_t row_bytes = 0;
    std::size_t rows = 1;
    std::size_t pitch = 0;
  };
  /// Issues a copy: on the compute stream, or into the batch of copies begun by begin_copies().
  /// The CPU copies at once.
  virtual void copy(const CopyRegion& r);

  // Asynchronous copies between the fact pool and the host tier (BatchPlan::async_loads and
  // async_offloads). On CUDA each batch between begin_copies() and end_copies() goes to a copy
  // thread, which issues it on one of two copy streams (one per direction) beside the compute
  // stream, so that the host never waits for PCIe while it launches compute; on the CPU copies
  // run at once and these do nothing.
  enum class CopyDirection { kToDevice, kToHost };
  /// Copies issued from now until end_copies() go to that direction's copy stream, after every
  /// piece of work issued to the compute stream so far (or, while a point is held, before it).
  virtual void begin_copies(CopyDirection direction) { (void)direction; }
  /// Holds the compute stream's point: batches begun from now until release_copy_point() follow
  /// the work issued to it before this call, not what is issued meanwhile (a step's forward
  /// pass, launched before copies that it does not need).
  virtual void hold_copy_point() {}
  virtual void release_copy_point() {}
  /// Back to the compute stream; returns a ticket for the copies since begin_copies() (tickets
  /// increase from 1 over both directions; 0 means none).
  virtual std::uint64_t end_copies() { return 0; }
  /// Work issued from now on to the current stream (the compute stream, or the copies of the
  /// batch between begin_copies and end_copies) waits for the copies of `ticket`, and so for
  /// those of every earlier ticket of the same direction.
  virtual void wait_copies(std::uint64_t ticket) { (void)ticket; }
  /// Whether the copies of `ticket` have finished (a query; never blocks).
  virtual bool copies_done(std::uint64_t ticket) {
    (void)ticket;
    return true;
  }
  /// Blocks until every copy issued so far has finished (before the memory they touch is freed).
  virtual void drain_copies() {}
  virtual at::Device device() const = 0;
  virtual std::string device_name() const = 0;
  /// The device memory allocator's running counters, as "name=value" pairs for the host trace
  /// (INFERSCALE_HOST_TRACE; CUDA: libtorch's caching allocator's device allocations and frees,
  /// its retries after a failed allocation, its reserved MB); "" where there are none (the CPU).
  virtual std::string allocator_counters() const { return ""; }

  /// Runs `forward`, a pass of the model whose every varying input is a view of `buffer` (one
  /// int32 device tensor) and whose launches depend on nothing but `shape` besides: `forward`
  /// is called with `buffer` or with a tensor of the same size and contents. The CUDA ops may
  /// replay a CUDA graph of it (CudaGraphPolicy); the result is then the graph's output, valid
  /// until the next call. The CPU calls it.
  virtual at::Tensor run_forward(const std::string& shape, std::int64_t tokens,
                                 const at::Tensor& buffer,
                                 const std::function<at::Tensor(const at::Tensor&)>& forward) {
    (void)shape;
    (void)tokens;
    return forward(buffer);
  }

  /// Which attention implementation attention() picks (GpuExecutorOptions::split_kv).
  void set_split_kv(const SplitKvPolicy& policy) { split_kv_ = policy; }
  const SplitKvPolicy& split_kv() const { return split_kv_; }
  const AttentionCounts& attention_counts() const { return counts_; }
  /// Which BLAS library libtorch's products use (CUDA; set_blas applies a fixed choice at once).
  virtual void set_blas(const BlasPolicy& policy) { blas_ = policy; }
  const BlasPolicy& blas() const { return blas_; }
  const GemmCounts& gemm_counts() const { return gemm_counts_; }
  /// When run_forward() replays CUDA graphs (GpuExecutorOptions::cuda_graphs).
  void set_cuda_graphs(const CudaGraphPolicy& policy) { graphs_ = policy; }
  const CudaGraphPolicy& cuda_graphs() const { return graphs_; }
  /// Forward passes run as a CUDA graph replay, since the ops were made.
  std::uint64_t graph_replays() const { return graph_replays_; }
  /// How many bytes of copies a copy lane keeps queued on its copy engine before it waits for
  /// older ones (CUDA; GpuExecutorOptions::copy_inflight_mb). Set before the first copy batch.
  void set_copy_inflight_bytes(std::size_t bytes) { copy_inflight_bytes_ = bytes; }
  std::size_t copy_inflight_bytes() const { return copy_inflight_bytes_; }

 protected:
  SplitKvPolicy split_kv_;
  AttentionCounts counts_;
  CudaGraphPolicy graphs_;
  std::uint64_t graph_replays_ = 0;
  BlasPolicy blas_;
  GemmCounts gemm_counts_;
  std::size_t copy_inflight_bytes_ = std::size_t(64) << 20;
};

/// Split-KV parameters of one attention call: tensors, strides and shape; the caller sets the
/// index arrays (device or host), the plan and the workspace. q [tokens, heads, head_dim] and
/// out like it, k and v [cache_rows, kv_heads, head_dim].
SplitKvAttentionParams split_kv_params(const at::Tensor& q, const at::Tensor& k,
                                       const at::Tensor& v, const at::Tensor& out,
                                       const AttentionBatch& batch, double scale);

/// Causal GQA attention by plain batched math (segments padded and masked) on any device: the
/// CPU path's attention, and the CUDA path's fallback where flash attention refuses.
at::Tensor math_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const AttentionBatch& batch, double scale);

/// The CPU implementation: kernels' references and batched math attention.
std::unique_ptr<DeviceOps> make_cpu_ops();

/// The CUDA implementation (kernels/, flash attention). Throws where this build has no CUDA
/// (libtorch without CUDA, or kernels not built).
std::unique_ptr<DeviceOps> make_cuda_ops();

/// Whether make_cuda_ops() can work here (built with CUDA and a device present).
bool cuda_ops_available();
/// Device memory free now on the current CUDA device, in bytes (0 without CUDA).
std::uint64_t cuda_free_bytes();
/// Returns the CUDA memory libtorch keeps cached but unused to the device, so that a later
/// executor in the same process (the next run of an experiment) can allocate it whole. No-op
/// without CUDA.
void release_cached_cuda_memory();

/// Whether the kernels that follow one another within a layer (kv_append, split-KV attention and
/// its combine, silu_mul, inject) launch with programmatic dependent launch
/// (process-wide; kernels/launch.cuh): on sm_90 and later each may start launching before the one
/// before it finishes, and waits for it inside. Results are the same either way. No-op without
/// CUDA.
void use_programmatic_launch(bool on);

/// Kernel dtype of a tensor's scalar type (float, bfloat16, half).
DType kernel_dtype(at::ScalarType t);

}  // namespace inferscale
