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

#include <cublasLt.h>

#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "executor/gpu/device_ops.h"
#include "executor/gpu/torch_compat.h"
#include "kernels/cuda_check.h"
#include "kernels/inject.cuh"
#include "kernels/kv_append.cuh"
#include "kernels/l2_prefetch.cuh"
#include "kernels/rms_norm.cuh"
#include "kernels/silu_mul.cuh"
#include "kernels/skinny_gemm.cuh"
#include "kernels/split_kv_attention.cuh"
#include "kernels/split_kv_plan.h"
#include "kernels/staged_copy.cuh"

namespace inferscale {

namespace {

cudaStream_t current_stream() {
  return at::cuda::getCurrentCUDAStream().stream();
}

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
    if (used_ > 0) {
      INFERSCALE_CUDA_CHECK(cudaEventSynchronize(events_[used_ - 1]));
    } else {
      INFERSCALE_CUDA_CHECK(cudaStreamSynchronize(current_stream()));
    }
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

void copy_on(const DeviceOps::CopyRegion& r, cudaStream_t stream) {
  if (r.rows <= 1) {
    INFERSCALE_CUDA_CHECK(cudaMemcpyAsync(r.dst, r.src, r.row_bytes, cudaMemcpyDefault, stream));
  } else {
    INFERSCALE_CUDA_CHECK(cudaMemcpy2DAsync(r.dst, r.pitch, r.src, r.pitch, r.row_bytes, r.rows,
                                            cudaMemcpyDefault, stream));
  }
}

/// Asynchronous loads and offloads: two lanes, one per direction (so that both PCIe directions
/// run at once), each a copy stream and a thread that issues the batches of copies on it.
///
/// A stream holds only so many operations before the call that adds one blocks until the copy
/// engine catches up, so thousands of block copies issued from the executor's thread would hold
/// it at PCIe speed; issued from a lane's thread they do not. A lane also keeps at most
/// in_flight_bytes_ of copies queued on its engine (it waits for older ones first), so that the
/// compute stream's own small transfers (uploads of step metadata, sampled tokens) never queue
/// behind seconds of bulk copies, and so that loads and offloads advance side by side.
///
/// Each batch gets a ticket (increasing over both lanes) and an event, recorded by its lane after
/// the batch's copies and recycled once they are done. A batch may wait for an earlier ticket of
/// the other lane (a load into blocks an offload frees); the executor's thread waits only where
/// the compute stream must wait for a ticket whose copies its lane has not issued yet.
class CopyEngine {
 public:
  explicit CopyEngine(at::Device device) : device_index_(device.index()) {
    for (Lane& lane : lanes_) {
      lane.stream = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index());
    }
    for (int i = 0; i < 2; ++i) lanes_[i].thread = std::thread([this, i] { run(lanes_[i]); });
  }
  ~CopyEngine() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    for (Lane& lane : lanes_) lane.queued_cv.notify_all();
    for (Lane& lane : lanes_) lane.thread.join();
    for (Lane& lane : lanes_) cudaStreamSynchronize(lane.stream->stream());
    for (auto& t : tickets_) cudaEventDestroy(t.second);
    for (cudaEvent_t e : spare_) cudaEventDestroy(e);
  }

  void begin(int direction) {
    rethrow();
    batch_ = Batch{};
    batch_.lane = direction;
    batch_.after = take();
    INFERSCALE_CUDA_CHECK(cudaEventRecord(batch_.after, current_stream()));
    open_ = true;
  }
  bool open() const { return open_; }
  void add(const DeviceOps::CopyRegion& r) { batch_.items.push_back({r, 0}); }
  std::uint64_t end() {
    open_ = false;
    Lane& lane = lanes_[batch_.lane];
    std::uint64_t ticket;
    {
      std::lock_guard lock(mutex_);
      ticket = ++submitted_;
      batch_.ticket = ticket;
      pending_.insert(ticket);
      lane.queue.push_back(std::move(batch_));
      // Recycle the events of tickets that are done.
      for (auto it = tickets_.begin(); it != tickets_.end() && tickets_.size() > 8;) {
        if (cudaEventQuery(it->second) == cudaSuccess) {
          spare_.push_back(it->second);
          it = tickets_.erase(it);
        } else {
          ++it;
        }
      }
    }
    lane.queued_cv.notify_one();
    return ticket;
  }
  void wait(std::uint64_t ticket) {
    if (open_) {
      batch_.items.push_back({DeviceOps::CopyRegion{}, ticket});  // the lane orders it
      return;
    }
    std::unique_lock lock(mutex_);
    cudaEvent_t e = recorded_event(ticket, lock);
    // Under the lock, so that end() cannot recycle the event before the wait is issued.
    if (e != nullptr) INFERSCALE_CUDA_CHECK(cudaStreamWaitEvent(current_stream(), e, 0));
  }
  bool done(std::uint64_t ticket) {
    std::lock_guard lock(mutex_);
    if (error_ != nullptr) std::rethrow_exception(error_);
    if (pending_.count(ticket) > 0) return false;
    const auto it = tickets_.find(ticket);
    return it == tickets_.end() || cudaEventQuery(it->second) == cudaSuccess;
  }
  /// Every batch submitted so far issued and finished.
  void drain() {
    {
      std::unique_lock lock(mutex_);
      recorded_cv_.wait(lock, [&] { return pending_.empty() || error_ != nullptr; });
    }
    for (Lane& lane : lanes_) cudaStreamSynchronize(lane.stream->stream());
  }

 private:
  /// 64 MiB unless INFERSCALE_COPY_INFLIGHT_MB says otherwise (a diagnostic: how deep the
  /// queue on a copy engine may be before a lane waits).
  static std::size_t in_flight_limit() {
    const char* env = std::getenv("INFERSCALE_COPY_INFLIGHT_MB");
    const long mb = env != nullptr ? std::strtol(env, nullptr, 10) : 0;
    return std::size_t(mb > 0 ? mb : 64) << 20;
  }
  const std::size_t in_flight_bytes_ = in_flight_limit();
  /// A progress event per 16 MiB (at most a quarter of the in-flight limit).
  const std::size_t mark_bytes_ = std::min(std::size_t(16) << 20, in_flight_bytes_ / 4);

  struct Item {
    DeviceOps::CopyRegion copy;
    std::uint64_t wait = 0;  // a ticket to wait for instead of a copy
  };
  struct Batch {
    int lane = 0;
    cudaEvent_t after = nullptr;  // the compute stream's work that the copies follow
    std::vector<Item> items;
    std::uint64_t ticket = 0;
  };
  struct Lane {
    std::optional<c10::cuda::CUDAStream> stream;
    std::deque<Batch> queue;  // under mutex_
    std::condition_variable queued_cv;
    std::thread thread;
    // The lane's thread only: events marking its progress, with the bytes issued before each.
    std::deque<std::pair<cudaEvent_t, std::size_t>> marks;
    std::size_t issued = 0, since_mark = 0;
  };

  // Under mutex_.
  cudaEvent_t take_locked() {
    if (!spare_.empty()) {
      cudaEvent_t e = spare_.back();
      spare_.pop_back();
      return e;
    }
    cudaEvent_t e;
    INFERSCALE_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return e;
  }
  cudaEvent_t take() {
    std::lock_guard lock(mutex_);
    return take_locked();
  }
  /// The event of a ticket once its lane has recorded it (nullptr: recycled, so done).
  cudaEvent_t recorded_event(std::uint64_t ticket, std::unique_lock<std::mutex>& lock) {
    recorded_cv_.wait(lock, [&] { return pending_.count(ticket) == 0 || error_ != nullptr; });
    if (error_ != nullptr) std::rethrow_exception(error_);
    const auto it = tickets_.find(ticket);
    return it == tickets_.end() ? nullptr : it->second;
  }
  void rethrow() {
    std::lock_guard lock(mutex_);
    if (error_ != nullptr) std::rethrow_exception(error_);
  }

  void run(Lane& lane) {
    cudaSetDevice(device_index_);
    const cudaStream_t stream = lane.stream->stream();
    for (;;) {
      Batch batch;
      {
        std::unique_lock lock(mutex_);
        lane.queued_cv.wait(lock, [&] { return stopping_ || !lane.queue.empty(); });
        if (lane.queue.empty()) return;
        batch = std::move(lane.queue.front());
        lane.queue.pop_front();
      }
      try {
        INFERSCALE_CUDA_CHECK(cudaStreamWaitEvent(stream, batch.after, 0));
        for (const Item& item : batch.items) {
          if (item.wait == 0) {
            cudaEvent_t mark = nullptr;
            throttle_and_mark(lane, item.copy.row_bytes * std::max<std::size_t>(1, item.copy.rows),
                              &mark);
            copy_on(item.copy, stream);
            if (mark != nullptr) INFERSCALE_CUDA_CHECK(cudaEventRecord(mark, stream));
            continue;
          }
          // An earlier ticket, of this lane (recorded) or of the other (wait for its record).
          std::unique_lock lock(mutex_);
          cudaEvent_t e = recorded_event(item.wait, lock);
          if (e != nullptr) INFERSCALE_CUDA_CHECK(cudaStreamWaitEvent(stream, e, 0));
        }
        cudaEvent_t e;
        {
          std::lock_guard lock(mutex_);
          spare_.push_back(batch.after);  // its wait is issued; a later record does not change it
          e = take_locked();
        }
        INFERSCALE_CUDA_CHECK(cudaEventRecord(e, stream));
        std::lock_guard lock(mutex_);
        tickets_.emplace(batch.ticket, e);
        pending_.erase(batch.ticket);
      } catch (...) {
        std::lock_guard lock(mutex_);
        if (error_ == nullptr) error_ = std::current_exception();
        pending_.erase(batch.ticket);
      }
      recorded_cv_.notify_all();
    }
  }

  /// Before issuing `bytes` more on the lane: wait until its engine holds at most
  /// in_flight_bytes_; sets *mark to an event to record after the copy every mark_bytes_.
  void throttle_and_mark(Lane& lane, std::size_t bytes, cudaEvent_t* mark) {
    while (!lane.marks.empty() &&
           lane.issued + bytes - lane.marks.front().second > in_flight_bytes_) {
      INFERSCALE_CUDA_CHECK(cudaEventSynchronize(lane.marks.front().first));
      cudaEventDestroy(lane.marks.front().first);
      lane.marks.pop_front();
    }
    lane.issued += bytes;
    lane.since_mark += bytes;
    if (lane.since_mark >= mark_bytes_) {
      lane.since_mark = 0;
      INFERSCALE_CUDA_CHECK(cudaEventCreateWithFlags(mark, cudaEventDisableTiming));
      lane.marks.emplace_back(*mark, lane.issued);
    }
  }

  int device_index_;
  Lane lanes_[2];
  // The executor's thread only.
  Batch batch_;
  bool open_ = false;
  // Shared with the lanes' threads, under mutex_.
  std::mutex mutex_;
  std::condition_variable recorded_cv_;
  std::map<std::uint64_t, cudaEvent_t> tickets_;  // recorded, not yet known to be done
  std::set<std::uint64_t> pending_;               // submitted, not yet recorded
  std::vector<cudaEvent_t> spare_;
  std::uint64_t submitted_ = 0;
  std::exception_ptr error_;
  bool stopping_ = false;
};

/// Few-row matrix products y (+)= x w^T by the cuBLASLt algorithm that timed fastest for their
/// shape (GemmTunePolicy), or not at all where libtorch's own product was as fast. Column-major,
/// as cuBLAS sees row-major operands: y^T [n, m] = (w [n, k] as a k x n matrix)^T x^T.
class GemmTuner {
 public:
  ~GemmTuner() {
    for (auto& [key, c] : choices_) c.destroy();
    if (handle_ != nullptr) cublasLtDestroy(handle_);
  }

  /// Runs the product by the tuned algorithm; false where the caller's path should run it
  /// (libtorch won the timing, the operands do not fit, or the shape is new during a capture).
  bool run(at::Tensor& y, const at::Tensor& x, const at::Tensor& w, bool accumulate,
           const GemmTunePolicy& policy, const std::function<void(at::Tensor&)>& fallback) {
    if (!fits(y, x, w)) return false;
    const Key key{x.size(0),   w.size(0),   x.size(1),  x.stride(0),
                  w.stride(0), y.stride(0), accumulate, x.scalar_type()};
    auto it = choices_.find(key);
    if (it == choices_.end()) {
      cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
      INFERSCALE_CUDA_CHECK(cudaStreamIsCapturing(current_stream(), &status));
      if (status != cudaStreamCaptureStatusNone) return false;
      it = choices_.emplace(key, tune(key, y, x, w, policy, fallback)).first;
    }
    Choice& c = it->second;
    if (!c.lt) return false;
    launch(c, y, x, w, accumulate);
    return true;
  }

 private:
  struct Key {
    std::int64_t m, n, k, ldx, ldw, ldy;
    bool accumulate;
    at::ScalarType dtype;
    auto tie() const { return std::tie(m, n, k, ldx, ldw, ldy, accumulate, dtype); }
    bool operator<(const Key& o) const { return tie() < o.tie(); }
  };
  struct Choice {
    bool lt = false;  // false: libtorch's product
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    void destroy() {
      if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
      for (cublasLtMatrixLayout_t l : {a, b, c}) {
        if (l != nullptr) cublasLtMatrixLayoutDestroy(l);
      }
    }
  };
  static constexpr std::size_t kWorkspaceBytes = std::size_t(32) << 20;

  static bool fits(const at::Tensor& y, const at::Tensor& x, const at::Tensor& w) {
    auto aligned = [](const at::Tensor& t) {
      return (reinterpret_cast<std::uintptr_t>(t.data_ptr()) & 15u) == 0 && t.stride(0) % 8 == 0;
    };
    const at::ScalarType t = x.scalar_type();
    return (t == at::kBFloat16 || t == at::kHalf) && w.scalar_type() == t && y.scalar_type() == t &&
           x.dim() == 2 && w.dim() == 2 && y.dim() == 2 && x.stride(1) == 1 && w.stride(1) == 1 &&
           y.stride(1) == 1 && x.size(1) == w.size(1) && y.size(0) == x.size(0) &&
           y.size(1) == w.size(0) && aligned(x) && aligned(w) && aligned(y);
  }

  static void check(cublasStatus_t st, const char* what) {
    if (st != CUBLAS_STATUS_SUCCESS) {
      throw std::runtime_error(std::string("cuBLASLt: ") + what + " failed (status " +
                               std::to_string(int(st)) + ")");
    }
  }

  void launch(const Choice& c, at::Tensor& y, const at::Tensor& x, const at::Tensor& w,
              bool accumulate) {
    const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    check(cublasLtMatmul(handle_, c.desc, &alpha, w.data_ptr(), c.a, x.data_ptr(), c.b, &beta,
                         y.data_ptr(), c.c, y.data_ptr(), c.c, &c.algo, workspace_.data_ptr(),
                         kWorkspaceBytes, current_stream()),
          "matmul");
  }

  /// Milliseconds per call of `f` on the compute stream (two warm-up calls, then eight).
  static float time(const std::function<void()>& f) {
    for (int i = 0; i < 2; ++i) f();
    cudaEvent_t e0, e1;
    INFERSCALE_CUDA_CHECK(cudaEventCreate(&e0));
    INFERSCALE_CUDA_CHECK(cudaEventCreate(&e1));
    INFERSCALE_CUDA_CHECK(cudaEventRecord(e0, current_stream()));
    for (int i = 0; i < 8; ++i) f();
    INFERSCALE_CUDA_CHECK(cudaEventRecord(e1, current_stream()));
    INFERSCALE_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    INFERSCALE_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return ms / 8;
  }

  Choice tune(const Key& key, const at::Tensor& y, const at::Tensor& x, const at::Tensor& w,
              const GemmTunePolicy& policy, const std::function<void(at::Tensor&)>& fallback) {
    if (handle_ == nullptr) {
      check(cublasLtCreate(&handle_), "create");
      workspace_ = at::empty({std::int64_t(kWorkspaceBytes)}, x.options().dtype(at::kByte));
    }
    const cudaDataType_t type = key.dtype == at::kBFloat16 ? CUDA_R_16BF : CUDA_R_16F;
    Choice c;
    check(cublasLtMatmulDescCreate(&c.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
    const cublasOperation_t trans = CUBLAS_OP_T, none = CUBLAS_OP_N;
    check(cublasLtMatmulDescSetAttribute(c.desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans),
          "transa");
    check(cublasLtMatmulDescSetAttribute(c.desc, CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof none),
          "transb");
    check(
        cublasLtMatrixLayoutCreate(&c.a, type, std::uint64_t(key.k), std::uint64_t(key.n), key.ldw),
        "layout a");
    check(
        cublasLtMatrixLayoutCreate(&c.b, type, std::uint64_t(key.k), std::uint64_t(key.m), key.ldx),
        "layout b");
    check(
        cublasLtMatrixLayoutCreate(&c.c, type, std::uint64_t(key.n), std::uint64_t(key.m), key.ldy),
        "layout c");
    cublasLtMatmulPreference_t pref;
    check(cublasLtMatmulPreferenceCreate(&pref), "preference");
    const std::uint64_t ws = kWorkspaceBytes;
    check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                               sizeof ws),
          "workspace preference");
    std::vector<cublasLtMatmulHeuristicResult_t> found(std::size_t(std::max(1, policy.candidates)));
    int returned = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(
        handle_, c.desc, c.a, c.b, c.c, c.c, pref, int(found.size()), found.data(), &returned);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS) returned = 0;

    // Timed into a scratch copy of y, so the caller's output is untouched.
    at::Tensor scratch = y.clone();
    const float base_ms = time([&] { fallback(scratch); });
    float best_ms = policy.force_cublaslt ? INFINITY : base_ms;
    for (int i = 0; i < returned; ++i) {
      if (found[std::size_t(i)].state != CUBLAS_STATUS_SUCCESS) continue;
      Choice trial = c;
      trial.algo = found[std::size_t(i)].algo;
      const float ms = time([&] { launch(trial, scratch, x, w, key.accumulate); });
      // Ties go to libtorch's product: a choice must win by 2 % (unless forced).
      if (ms < best_ms && (policy.force_cublaslt || ms < 0.98f * base_ms)) {
        best_ms = ms;
        c.algo = trial.algo;
        c.lt = true;
      }
    }
    return c;
  }

  cublasLtHandle_t handle_ = nullptr;
  at::Tensor workspace_;
  std::map<Key, Choice> choices_;
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

  at::Tensor linear(const at::Tensor& x, const at::Tensor& w) override {
    const bool skinny_path = skinny_wanted(x, w), tuned_path = tune_wanted(x);
    if (!skinny_path && !tuned_path) return DeviceOps::linear(x, w);
    at::Tensor y = at::empty({x.size(0), w.size(0)}, x.options());
    if (skinny_path && skinny(y, x, w, false)) return y;
    if (tuned_path && tuned(y, x, w, false)) return y;
    return DeviceOps::linear(x, w);
  }
  void linear_add(at::Tensor& y, const at::Tensor& x, const at::Tensor& w) override {
    if (skinny_wanted(x, w) && y.dim() == 2 && y.stride(1) == 1 && skinny(y, x, w, true)) return;
    if (tune_wanted(x) && tuned(y, x, w, true)) return;
    DeviceOps::linear_add(y, x, w);
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

  void prefetch_l2(const at::Tensor& t) override {
    if (!l2_prefetch_.enabled || !t.is_cuda()) return;
    if (!prefetch_stream_) {
      prefetch_stream_ = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device_.index());
      INFERSCALE_CUDA_CHECK(cudaEventCreateWithFlags(&prefetch_after_, cudaEventDisableTiming));
      INFERSCALE_CUDA_CHECK(cudaEventCreateWithFlags(&prefetch_done_, cudaEventDisableTiming));
    }
    join_prefetch();  // one at a time
    const cudaStream_t side = prefetch_stream_->stream();
    INFERSCALE_CUDA_CHECK(cudaEventRecord(prefetch_after_, current_stream()));
    INFERSCALE_CUDA_CHECK(cudaStreamWaitEvent(side, prefetch_after_, 0));
    INFERSCALE_CUDA_CHECK(
        l2_prefetch_launch(t.data_ptr(), std::size_t(t.numel()) * t.element_size(), side));
    INFERSCALE_CUDA_CHECK(cudaEventRecord(prefetch_done_, side));
    prefetch_pending_ = true;
  }
  void join_prefetch() override {
    if (!prefetch_pending_) return;
    INFERSCALE_CUDA_CHECK(cudaStreamWaitEvent(current_stream(), prefetch_done_, 0));
    prefetch_pending_ = false;
  }

  bool tune_wanted(const at::Tensor& x) const {
    return gemm_tune_.enabled && x.dim() == 2 && x.size(0) <= gemm_tune_.max_rows;
  }

  /// y (+)= x w^T by the tuned choice for its shape; false where libtorch's product runs.
  bool tuned(at::Tensor& y, const at::Tensor& x, const at::Tensor& w, bool accumulate) {
    const auto fallback = [&](at::Tensor& out) {
      if (accumulate) {
        out.addmm_(x, w.t());
      } else {
        at::mm_out(out, x, w.t());
      }
    };
    if (!tuner_.run(y, x, w, accumulate, gemm_tune_, fallback)) return false;
    ++gemm_counts_.tuned;
    return true;
  }

  bool skinny_wanted(const at::Tensor& x, const at::Tensor& w) const {
    return skinny_ok_ && skinny_gemm_.enabled && x.dim() == 2 && w.dim() == 2 &&
           x.size(0) <= skinny_gemm_.max_rows && x.scalar_type() == w.scalar_type() &&
           (x.scalar_type() == at::kBFloat16 || x.scalar_type() == at::kHalf) && x.stride(1) == 1 &&
           w.stride(1) == 1 && x.size(1) == w.size(1);
  }

  /// y (+)= x w^T by the skinny kernel; false where it does not take these operands (shape,
  /// alignment) or was not built for this GPU (said once; libtorch's product runs instead).
  bool skinny(at::Tensor& y, const at::Tensor& x, const at::Tensor& w, bool accumulate) {
    SkinnyGemmParams p;
    p.x = x.data_ptr();
    p.w = w.data_ptr();
    p.out = y.data_ptr();
    p.residual = accumulate ? y.data_ptr() : nullptr;
    p.rows = x.size(0);
    p.n = w.size(0);
    p.k = x.size(1);
    p.x_stride = x.stride(0);
    p.w_stride = w.stride(0);
    p.out_stride = y.stride(0);
    p.dtype = kernel_dtype(x.scalar_type());
    p.splits = skinny_gemm_splits(p, sm_count_);
    at::Tensor workspace;
    if (p.splits > 1) {
      // Counters: zeroed once here, before any graph capture (a product that needs more of
      // them than 4 blocks per SM never splits); each launch leaves them zero.
      if (!skinny_counters_.defined()) {
        skinny_counters_ = at::zeros({4 * std::int64_t(sm_count_)}, x.options().dtype(at::kInt));
      }
      if (skinny_gemm_counters(p) > skinny_counters_.numel()) {
        p.splits = 1;
      } else {
        workspace = at::empty({p.splits * p.rows * p.n}, x.options().dtype(at::kFloat));
        p.workspace = workspace.data_ptr<float>();
        p.counters = reinterpret_cast<std::uint32_t*>(skinny_counters_.data_ptr<std::int32_t>());
      }
    }
    if (!skinny_gemm_supported(p)) return false;
    const cudaError_t err = skinny_gemm_launch(p, current_stream());
    if (err == cudaErrorNotSupported) {
      std::fprintf(stderr,
                   "warning: the skinny matrix product is not built for this GPU; using "
                   "cuBLAS\n");
      skinny_ok_ = false;
      return false;
    }
    INFERSCALE_CUDA_CHECK(err);
    ++gemm_counts_.skinny;
    return true;
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
    if (!copies_) copies_ = std::make_unique<CopyEngine>(device_);
    copies_->begin(direction == CopyDirection::kToDevice ? 0 : 1);
  }
  std::uint64_t end_copies() override { return copies_->end(); }
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
  bool skinny_ok_ = true;
  GemmTuner tuner_;
  // L2 prefetches: a side stream, the event it waits for and the one the compute stream joins.
  std::optional<c10::cuda::CUDAStream> prefetch_stream_;
  cudaEvent_t prefetch_after_ = nullptr, prefetch_done_ = nullptr;
  bool prefetch_pending_ = false;
  at::Tensor skinny_counters_;  // the skinny kernel's split counters (int32, zero between launches)
};

}  // namespace

std::unique_ptr<DeviceOps> make_cuda_ops() {
  if (!at::cuda::is_available()) throw std::runtime_error("no CUDA device available");
  return std::make_unique<CudaOps>();
}

bool cuda_ops_available() {
  return at::cuda::is_available();
}

void release_cached_cuda_memory() {
  if (at::cuda::is_available()) c10::cuda::CUDACachingAllocator::emptyCache();
}

void prefer_cublaslt(bool on) {
  at::globalContext().setBlasPreferredBackend(on ? at::BlasBackend::Cublaslt
                                                 : at::BlasBackend::Cublas);
}

}  // namespace inferscale
