#pragma once
// @brief Timed choice of cuBLASLt algorithms for few-row matrix products (GemmTunePolicy). Only
// executor/gpu/cuda_ops.cpp includes it (libtorch with CUDA).

#include <ATen/ATen.h>
#include <cublasLt.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "executor/gpu/cuda_copy_engine.h"  // current_stream()
#include "executor/gpu/device_ops.h"
#include "kernels/cuda_check.h"

namespace inferscale::cuda_detail {

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

}  // namespace inferscale::cuda_detail
