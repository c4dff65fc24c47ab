// CUDA implementation of DeviceOps: the kernels of kernels/ on torch's current stream,
// attention by the split-KV kernel for short queries over long contexts and by varlen flash
// attention (PyTorch 2.x) elsewhere, pinned asynchronous uploads and CUDA-event step timing.
// Compiled only where libtorch has CUDA and the kernels are built (executor/gpu/CMakeLists.txt).
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "executor/gpu/cuda_copy_engine.h"
#include "executor/gpu/device_ops.h"
#include "executor/gpu/torch_compat.h"
#include "kernels/argmax.cuh"
#include "kernels/cuda_check.h"
#include "kernels/inject.cuh"
#include "kernels/kv_append.cuh"
#include "kernels/launch.h"
#include "kernels/rms_norm.cuh"
#include "kernels/silu_mul.cuh"
#include "kernels/split_kv_attention.cuh"
#include "kernels/split_kv_plan.h"
#include "kernels/staged_copy.cuh"

namespace inferscale {

namespace {

using cuda_detail::copy_on;
using cuda_detail::CopyEngine;
using cuda_detail::current_stream;

class CudaClock : public StepClock {
 public:
  ~CudaClock() override {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    if (prev_ != nullptr) cudaEventDestroy(prev_);
  }
  void reset() override {
    // A new step: what the last one staged is no longer read once the stream is idle.
    if (!staged_.empty() && cudaStreamQuery(current_stream()) == cudaSuccess) staged_.clear();
    // Keep the last step's final mark: gap_ns() measures from it.
    if (used_ > 0) {
      if (prev_ == nullptr) INFERSCALE_CUDA_CHECK(cudaEventCreate(&prev_));
      std::swap(prev_, events_[used_ - 1]);
      has_prev_ = true;
    }
    used_ = 0;
  }
  std::int64_t gap_ns() override {
    if (!has_prev_ || used_ == 0) return -1;
    float ms = 0;
    INFERSCALE_CUDA_CHECK(cudaEventElapsedTime(&ms, prev_, events_[0]));
    return std::int64_t(double(ms) * 1e6);
  }
  /// Keeps a buffer of a staged copy alive until a later step starts with the stream idle.
  void keep_staged(at::Tensor buffer) { staged_.push_back(std::move(buffer)); }
  int mark() override {
    if (used_ == int(events_.size())) {
      cudaEvent_t e;
      INFERSCALE_CUDA_CHECK(cudaEventCreate(&e));
      events_.push_back(e);
    }
    INFERSCALE_CUDA_CHECK(cudaEventRecord(events_[used_], current_stream()));
    return used_++;
  }
  void synchronize() override {
    // The whole stream, not the last mark: work issued after it (warm-up and settling passes,
    // a header encode between steps) must be done too.
    INFERSCALE_CUDA_CHECK(cudaStreamSynchronize(current_stream()));
  }
  std::int64_t elapsed_ns(int from, int to) override {
    float ms = 0;
    INFERSCALE_CUDA_CHECK(cudaEventElapsedTime(&ms, events_.at(from), events_.at(to)));
    return std::int64_t(double(ms) * 1e6);
  }

 private:
  std::vector<cudaEvent_t> events_;
  int used_ = 0;
  cudaEvent_t prev_ = nullptr;
  bool has_prev_ = false;
  std::vector<at::Tensor> staged_;  // buffers the compute stream may still read or write
};

class CudaOps : public DeviceOps {
 public:
  CudaOps()
      : device_(at::kCUDA, at::cuda::current_device()),
        sm_count_(at::cuda::getCurrentDeviceProperties()->multiProcessorCount) {}

  void kv_append(const KvAppendParams& p) override {
    INFERSCALE_CUDA_CHECK(kv_append_launch(p, current_stream()));
  }
  void kv_inject(const InjectParams& p) override {
    INFERSCALE_CUDA_CHECK(kv_inject_launch(p, current_stream()));
  }
  void rms_norm(const RmsNormParams& p) override {
    INFERSCALE_CUDA_CHECK(rms_norm_launch(p, current_stream()));
  }
  void silu_mul(const SiluMulParams& p) override {
    INFERSCALE_CUDA_CHECK(silu_mul_launch(p, current_stream()));
  }
  void argmax(const ArgmaxParams& p) override {
    INFERSCALE_CUDA_CHECK(argmax_launch(p, current_stream()));
  }

  at::Tensor linear(const at::Tensor& x, const at::Tensor& w) override {
    choose_blas(x);
    return DeviceOps::linear(x, w);
  }
  void linear_add(at::Tensor& y, const at::Tensor& x, const at::Tensor& w) override {
    choose_blas(x);
    DeviceOps::linear_add(y, x, w);
  }

  void set_blas(const BlasPolicy& policy) override {
    DeviceOps::set_blas(policy);
    prefer_lt(policy.library == BlasLibrary::kCublasLt);
  }
  /// Sets libtorch's BLAS preference for the product of `x` that follows (BlasPolicy) and
  /// counts the products on cuBLASLt.
  void choose_blas(const at::Tensor& x) { gemm_counts_.blas_lt += apply_blas(x) ? 1 : 0; }
  /// Sets the preference for the product of `x`; whether it is cuBLASLt.
  bool apply_blas(const at::Tensor& x) {
    bool lt = blas_.library == BlasLibrary::kCublasLt;
    if (blas_.library == BlasLibrary::kFewRowsLt) {
      lt = x.dim() == 2 && x.size(0) <= blas_.lt_max_rows;
      prefer_lt(lt);
    }
    return lt;
  }
  static void prefer_lt(bool on) {
    at::globalContext().setBlasPreferredBackend(on ? at::BlasBackend::Cublaslt
                                                   : at::BlasBackend::Cublas);
  }

  at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                       const AttentionBatch& b, double scale) override {
    if (split_kv_wanted(split_kv_, b)) {
      at::Tensor out = split_kv_attention(q, k, v, b, scale);
      if (out.defined()) return out;
    }
    // Varlen flash attention over the KV cache in place: cum_seq_k holds each segment's first
    // cache row and seqused_k its length, so no KV is copied per step. GQA is native.
    if (!flash_ok_) {
      ++counts_.math;
      return math_attention(q, k, v, b, scale);
    }
    const compat::OptionalTensor cu_q = b.cu_q, cu_k = b.k_start, used_k = b.k_used;
    try {
      auto out = at::_flash_attention_forward(q, k, v, cu_q, cu_k, b.max_q, b.max_k,
                                              /*dropout_p=*/0.0, /*is_causal=*/true,
                                              /*return_debug_mask=*/false, scale,
                                              /*window_size_left=*/c10::nullopt,
                                              /*window_size_right=*/c10::nullopt, used_k);
      ++counts_.flash;
      return std::get<0>(out);
    } catch (const c10::Error& e) {
      // A libtorch without flash attention for this device or shape: say so once, then run
      // the (slow) math path rather than fail.
      std::fprintf(stderr, "warning: flash attention unavailable (%s); using math attention\n",
                   e.what_without_backtrace());
      flash_ok_ = false;
      ++counts_.math;
      return math_attention(q, k, v, b, scale);
    }
  }

  /// The split-KV kernel on the KV cache in place, with an fp32 workspace for its partials from
  /// the caching allocator (stream-ordered reuse). Undefined where the kernel does not take
  /// these parameters (dtype, head_dim, alignment): said once, then the caller's path runs.
  at::Tensor split_kv_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                const AttentionBatch& b, double scale) {
    if (!split_kv_ok_) return at::Tensor();
    at::Tensor out = at::empty_like(q);
    SplitKvAttentionParams p = split_kv_params(q, k, v, out, b, scale);
    p.cu_q = b.cu_q.data_ptr<std::int32_t>();
    p.k_start = b.k_start.data_ptr<std::int32_t>();
    p.k_used = b.k_used.data_ptr<std::int32_t>();
    p.plan = split_kv_plan({p.segments, p.max_q, p.max_k, p.heads, p.kv_heads}, sm_count_, 0, 0,
                           split_kv_.min_chunk_tiles);
    const std::int64_t floats = split_kv_workspace_floats(p.plan, p.tokens, p.heads, p.head_dim);
    at::Tensor workspace;
    if (floats > 0) {
      workspace = at::empty({floats}, q.options().dtype(at::kFloat));
      p.workspace = workspace.data_ptr<float>();
    }
    const std::string why = split_kv_attention_check(p);
    if (!why.empty()) {
      std::fprintf(stderr,
                   "warning: split-KV attention does not take this model (%s); using "
                   "flash attention\n",
                   why.c_str());
      split_kv_ok_ = false;
      return at::Tensor();
    }
    const cudaError_t err = split_kv_attention_launch(p, current_stream());
    if (err == cudaErrorNotSupported) {  // a build without sm_80+ device code for the kernel
      std::fprintf(stderr,
                   "warning: split-KV attention not built for this GPU; using flash "
                   "attention\n");
      split_kv_ok_ = false;
      return at::Tensor();
    }
    INFERSCALE_CUDA_CHECK(err);
    ++counts_.split_kv;
    return out;
  }

  // Uploads and downloads of a step go through the multiprocessors (kernels/staged_copy.cuh),
  // not a copy engine, where they would queue behind the host tier's bulk copies. The clock
  // keeps their buffers until a later step starts with the stream idle.
  at::Tensor upload(const std::vector<std::int32_t>& host) override {
    at::Tensor pinned = at::empty({std::int64_t(host.size())},
                                  at::TensorOptions().dtype(at::kInt).pinned_memory(true));
    std::copy(host.begin(), host.end(), pinned.data_ptr<std::int32_t>());
    at::Tensor out =
        at::empty({std::int64_t(host.size())}, at::TensorOptions().dtype(at::kInt).device(device_));
    INFERSCALE_CUDA_CHECK(
        staged_copy_launch(out.data_ptr(), pinned.data_ptr(), host.size(), current_stream()));
    clock_.keep_staged(std::move(pinned));
    return out;
  }

  at::Tensor to_host(const at::Tensor& t) override {
    at::Tensor out = at::empty(t.sizes(), t.options().device(at::kCPU).pinned_memory(true));
    const at::Tensor src = t.contiguous();
    const std::size_t bytes = std::size_t(src.numel()) * src.element_size();
    if (bytes % 4 != 0) {
      out.copy_(src, /*non_blocking=*/true);
      return out;
    }
    INFERSCALE_CUDA_CHECK(
        staged_copy_launch(out.data_ptr(), src.data_ptr(), bytes / 4, current_stream()));
    clock_.keep_staged(out);
    clock_.keep_staged(src);
    return out;
  }

  StepClock& clock() override { return clock_; }

  at::Tensor run_forward(const std::string& shape, std::int64_t tokens, const at::Tensor& buffer,
                         const std::function<at::Tensor(const at::Tensor&)>& forward) override {
    if (!graphs_.enabled || graphs_.max_graphs <= 0 || tokens > graphs_.max_tokens) {
      return forward(buffer);
    }
    if (const auto it = graphs_by_shape_.find(shape); it != graphs_by_shape_.end()) {
      Graph& g = *it->second;
      g.input.copy_(buffer, /*non_blocking=*/true);
      g.graph->replay();
      g.last_use = ++uses_;
      counts_.split_kv += g.counts.split_kv;
      counts_.flash += g.counts.flash;
      counts_.math += g.counts.math;
      ++graph_replays_;
      return g.output;
    }
    if (sightings_.size() > 4096) sightings_.clear();
    if (++sightings_[shape] < 2) return forward(buffer);  // a shape seen once may not recur
    return capture(shape, buffer, forward);
  }

  void copy(const CopyRegion& r) override {
    if (copies_ && copies_->open()) {
      copies_->add(r);
    } else {
      copy_on(r, current_stream());
    }
  }
  void begin_copies(CopyDirection direction) override {
    if (!copies_) copies_ = std::make_unique<CopyEngine>(device_, copy_inflight_bytes_);
    copies_->begin(direction == CopyDirection::kToDevice ? 0 : 1);
  }
  std::uint64_t end_copies() override { return copies_->end(); }
  void hold_copy_point() override {
    if (!copies_) copies_ = std::make_unique<CopyEngine>(device_, copy_inflight_bytes_);
    copies_->hold_point();
  }
  void release_copy_point() override {
    if (copies_) copies_->release_point();
  }
  void wait_copies(std::uint64_t ticket) override {
    if (copies_ && ticket > 0) copies_->wait(ticket);
  }
  bool copies_done(std::uint64_t ticket) override {
    return !copies_ || ticket == 0 || copies_->done(ticket);
  }
  void drain_copies() override {
    if (copies_) copies_->drain();
  }

  at::Device device() const override { return device_; }
  std::string device_name() const override { return at::cuda::getCurrentDeviceProperties()->name; }
  std::string allocator_counters() const override {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device_.index());
    constexpr std::size_t kAll = 0;  // StatType::AGGREGATE: both pools
    return "device_allocs=" + std::to_string(stats.segment[kAll].allocated) +
           " device_frees=" + std::to_string(stats.segment[kAll].freed) +
           " alloc_retries=" + std::to_string(stats.num_alloc_retries) +
           " reserved_mb=" + std::to_string(stats.reserved_bytes[kAll].current >> 20);
  }

 private:
  struct Graph {
    std::unique_ptr<at::cuda::CUDAGraph> graph;
    at::Tensor input, output;  // what the graph reads and writes (output in its memory pool)
    AttentionCounts counts;    // attention calls of one pass
    std::uint64_t last_use = 0;
  };

  /// Runs the pass on a side stream (graphs are captured off the default stream) and captures
  /// it there; the first replay is the next call with this shape.
  at::Tensor capture(const std::string& shape, const at::Tensor& buffer,
                     const std::function<at::Tensor(const at::Tensor&)>& forward) {
    if (std::int32_t(graphs_by_shape_.size()) >= graphs_.max_graphs) {
      auto oldest = graphs_by_shape_.begin();
      for (auto it = graphs_by_shape_.begin(); it != graphs_by_shape_.end(); ++it) {
        if (it->second->last_use < oldest->second->last_use) oldest = it;
      }
      graphs_by_shape_.erase(oldest);
    }
    auto g = std::make_unique<Graph>();
    g->input = buffer.clone();
    if (!capture_stream_) {
      capture_stream_ = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device_.index());
    }
    const c10::cuda::CUDAStream compute = at::cuda::getCurrentCUDAStream();
    at::cuda::CUDAEvent inputs_ready, pass_done;
    inputs_ready.record(compute);
    inputs_ready.block(*capture_stream_);
    at::Tensor out;
    {
      c10::cuda::CUDAStreamGuard on_side(*capture_stream_);
      out = forward(buffer);  // this step's result
      const AttentionCounts before = counts_;
      g->graph = std::make_unique<at::cuda::CUDAGraph>();
      // Thread-local: the copy engine's threads keep calling CUDA meanwhile.
      g->graph->capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
      g->output = forward(g->input);
      g->graph->capture_end();
      g->counts = {counts_.split_kv - before.split_kv, counts_.flash - before.flash,
                   counts_.math - before.math};
      counts_ = before;
      pass_done.record(*capture_stream_);
    }
    pass_done.block(compute);
    out.record_stream(compute);  // made on the side stream, used and freed on the compute one
    g->last_use = ++uses_;
    graphs_by_shape_[shape] = std::move(g);
    return out;
  }

  at::Device device_;
  std::int32_t sm_count_;
  std::optional<c10::cuda::CUDAStream> capture_stream_;
  std::unordered_map<std::string, std::unique_ptr<Graph>> graphs_by_shape_;
  std::unordered_map<std::string, int> sightings_;
  std::uint64_t uses_ = 0;
  CudaClock clock_;
  std::unique_ptr<CopyEngine> copies_;
  bool flash_ok_ = true;
  bool split_kv_ok_ = true;
};

}  // namespace

std::unique_ptr<DeviceOps> make_cuda_ops() {
  if (!at::cuda::is_available()) throw std::runtime_error("no CUDA device available");
  return std::make_unique<CudaOps>();
}

bool cuda_ops_available() {
  return at::cuda::is_available();
}

std::uint64_t cuda_free_bytes() {
  if (!at::cuda::is_available()) return 0;
  std::size_t free = 0, total = 0;
  INFERSCALE_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

void release_cached_cuda_memory() {
  if (at::cuda::is_available()) c10::cuda::CUDACachingAllocator::emptyCache();
}

void use_programmatic_launch(bool on) {
  set_programmatic_launch(on);
}

}  // namespace inferscale
