#pragma once
// @brief Timed choice of cuBLASLt algorithms for few-row matrix products (GemmTunePolicy). Only
// executor/gpu/cuda_ops.cpp includes it (libtorch with CUDA).

#include <ATen/ATen.h>
#include <cublasLt.h>

#include <algorithm>
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
    if (start_ != nullptr) cudaEventDestroy(start_);
    if (stop_ != nullptr) cudaEventDestroy(stop_);
  }

  /// The shapes tuned so far, in order.
  const std::vector<GemmTuneRecord>& records() const { return records_; }

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

  /// Median milliseconds of one call of `f` on the compute stream, each of kTimedCalls timed
  /// alone after a read of a buffer twice the L2 cache's size, so that the call's operands come
  /// from memory as a step's weights do (timed back to back, a product of a few dozen MB would
  /// read them from L2 and rank the configurations wrongly).
  float time_cold(const std::function<void()>& f) {
    if (!flush_.defined()) {
      int device = 0, l2 = 0;
      INFERSCALE_CUDA_CHECK(cudaGetDevice(&device));
      INFERSCALE_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
      flush_ = at::ones({std::max<std::int64_t>(2 * std::int64_t(l2), 1 << 22) / 4},
                        workspace_.options().dtype(at::kFloat));
      INFERSCALE_CUDA_CHECK(cudaEventCreate(&start_));
      INFERSCALE_CUDA_CHECK(cudaEventCreate(&stop_));
    }
    f();  // first-use costs
    std::vector<float> ms;
    for (int i = 0; i < kTimedCalls; ++i) {
      // Clean lines of other data in L2 (a write would leave dirty ones to write back).
      (void)flush_.sum();
      INFERSCALE_CUDA_CHECK(cudaEventRecord(start_, current_stream()));
      f();
      INFERSCALE_CUDA_CHECK(cudaEventRecord(stop_, current_stream()));
      INFERSCALE_CUDA_CHECK(cudaEventSynchronize(stop_));
      float t = 0;
      INFERSCALE_CUDA_CHECK(cudaEventElapsedTime(&t, start_, stop_));
      ms.push_back(t);
    }
    std::nth_element(ms.begin(), ms.begin() + kTimedCalls / 2, ms.end());
    return ms[kTimedCalls / 2];
  }

  /// The algorithms to time: cuBLASLt's heuristic's, and with policy.split_k each of them that
  /// can split K but does not, split 2 to 16 ways with the partial sums reduced in fp32 (a
  /// reduction in the output type would round more than libtorch's product does).
  std::vector<cublasLtMatmulAlgo_t> configurations(const Choice& c, const GemmTunePolicy& policy) {
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
    std::vector<cublasLtMatmulAlgo_t> out;
    for (int i = 0; i < returned; ++i) {
      const cublasLtMatmulHeuristicResult_t& h = found[std::size_t(i)];
      if (h.state != CUBLAS_STATUS_SUCCESS) continue;
      out.push_back(h.algo);
      std::int32_t can_split = 0;
      std::uint32_t schemes = 0, splits = 1;
      std::size_t written = 0;
      if (!policy.split_k ||
          cublasLtMatmulAlgoCapGetAttribute(&h.algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &can_split,
                                            sizeof can_split, &written) != CUBLAS_STATUS_SUCCESS ||
          cublasLtMatmulAlgoCapGetAttribute(&h.algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK,
                                            &schemes, sizeof schemes,
                                            &written) != CUBLAS_STATUS_SUCCESS ||
          cublasLtMatmulAlgoConfigGetAttribute(&h.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits,
                                               sizeof splits, &written) != CUBLAS_STATUS_SUCCESS) {
        continue;
      }
      const std::uint32_t fp32 = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
      if (can_split == 0 || splits > 1 || (schemes & fp32) == 0) continue;
      for (const std::uint32_t n : {2u, 3u, 4u, 6u, 8u, 12u, 16u}) {
        cublasLtMatmulAlgo_t a = h.algo;
        cublasLtMatmulHeuristicResult_t r{};
        if (cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &n,
                                                 sizeof n) != CUBLAS_STATUS_SUCCESS ||
            cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &fp32,
                                                 sizeof fp32) != CUBLAS_STATUS_SUCCESS ||
            cublasLtMatmulAlgoCheck(handle_, c.desc, c.a, c.b, c.c, c.c, &a, &r) !=
                CUBLAS_STATUS_SUCCESS ||
            r.workspaceSize > kWorkspaceBytes) {
          continue;
        }
        out.push_back(a);
      }
    }
    return out;
  }

  template <typename V>
  static V config(const cublasLtMatmulAlgo_t& a, cublasLtMatmulAlgoConfigAttributes_t attr,
                  V fallback) {
    V v = fallback;
    std::size_t written = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&a, attr, &v, sizeof v, &written) !=
        CUBLAS_STATUS_SUCCESS) {
      return fallback;
    }
    return v;
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
    const std::vector<cublasLtMatmulAlgo_t> algos = configurations(c, policy);

    // Timed into a scratch copy of y, so the caller's output is untouched.
    at::Tensor scratch = y.clone();
    GemmTuneRecord rec;
    rec.m = key.m;
    rec.n = key.n;
    rec.k = key.k;
    rec.accumulate = key.accumulate;
    rec.configurations = std::int32_t(algos.size());
    const float base_ms = time_cold([&] { fallback(scratch); });
    float best_ms = INFINITY;
    for (const cublasLtMatmulAlgo_t& a : algos) {
      Choice trial = c;
      trial.algo = a;
      const float ms = time_cold([&] { launch(trial, scratch, x, w, key.accumulate); });
      if (ms < best_ms) {
        best_ms = ms;
        c.algo = a;
      }
    }
    // Ties go to libtorch's product: a choice must win by 2 % (unless forced).
    c.lt = !algos.empty() && (policy.force_cublaslt || best_ms < 0.98f * base_ms);
    rec.base_us = 1e3 * double(base_ms);
    rec.best_us = algos.empty() ? 0.0 : 1e3 * double(best_ms);
    if (!algos.empty()) {
      rec.algo = config<std::int32_t>(c.algo, CUBLASLT_ALGO_CONFIG_ID, -1);
      rec.tile = std::int32_t(config<std::uint32_t>(c.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, 0));
      rec.split_k = std::int32_t(config<std::uint32_t>(c.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, 1));
    }
    rec.chosen = c.lt;
    records_.push_back(rec);
    return c;
  }

  static constexpr int kTimedCalls = 9;
  cublasLtHandle_t handle_ = nullptr;
  at::Tensor workspace_;
  at::Tensor flush_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  std::map<Key, Choice> choices_;
  std::vector<GemmTuneRecord> records_;
};

}  // namespace inferscale::cuda_detail
