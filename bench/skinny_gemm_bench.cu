// The skinny matrix product's variants against cuBLAS on the matrix products of one forward of
// a Llama-3.1-8B-shaped model (QKV, O, gate/up, down with 1, 16 and 32 rows; the LM head with
// one row), timed with CUDA events over launches that rotate through enough copies of the
// weights that none is still in the L2 cache. Prints a Markdown table: microseconds per launch
// and the weights' bytes over that time (TB/s), for cuBLAS (cublasGemmEx, bf16 in and out, fp32
// accumulation: what libtorch calls for a linear layer) and each variant with K whole and split;
// every output is checked against cuBLAS's (the largest difference relative to the largest
// element).
//
//   skinny_gemm_bench [--reps N]     (bench/results/skinny_gemm/)
#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/cuda_check.h"
#include "kernels/skinny_gemm.cuh"

using namespace inferscale;

namespace {

__global__ void fill_kernel(__nv_bfloat16* p, std::size_t n, std::uint32_t seed, float scale) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    std::uint32_t h = std::uint32_t(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    p[i] = __float2bfloat16((float(h & 0xffff) / 65535.0f - 0.5f) * scale);
  }
}

void fill(__nv_bfloat16* p, std::size_t n, std::uint32_t seed, float scale) {
  fill_kernel<<<1024, 256>>>(p, n, seed, scale);
  INFERSCALE_CUDA_CHECK(cudaGetLastError());
}

struct Shape {
  const char* name;
  std::int64_t n, k;
};

#define CUBLAS_CHECK(x)                                                                 \
  do {                                                                                  \
    const cublasStatus_t st_ = (x);                                                     \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                                 \
      std::fprintf(stderr, "cuBLAS error %d at %s:%d\n", int(st_), __FILE__, __LINE__); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

}  // namespace

int main(int argc, char** argv) {
  int reps = 60;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--reps") reps = std::max(1, std::atoi(argv[i + 1]));
  }
  int sms = 0;
  INFERSCALE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop{};
  INFERSCALE_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  cublasHandle_t handle;
  CUBLAS_CHECK(cublasCreate(&handle));
  cudaStream_t stream;
  INFERSCALE_CUDA_CHECK(cudaStreamCreate(&stream));
  CUBLAS_CHECK(cublasSetStream(handle, stream));
  void* cublas_ws = nullptr;
  INFERSCALE_CUDA_CHECK(cudaMalloc(&cublas_ws, 64 << 20));
  CUBLAS_CHECK(cublasSetWorkspace(handle, cublas_ws, 64 << 20));

  const Shape shapes[] = {{"qkv", 6144, 4096},
                          {"o", 4096, 4096},
                          {"gate_up", 28672, 4096},
                          {"down", 4096, 14336},
                          {"lm_head", 128256, 4096}};
  const std::int64_t row_counts[] = {1, 16, 32};

  std::printf("# skinny_gemm_bench on %s (%d SMs), %d launches per row\n\n", prop.name, sms, reps);
  std::printf("| product | rows | n | k | config | us | TB/s | max diff / max |\n");
  std::printf("|---|---:|---:|---:|---|---:|---:|---:|\n");

  cudaEvent_t e0, e1;
  INFERSCALE_CUDA_CHECK(cudaEventCreate(&e0));
  INFERSCALE_CUDA_CHECK(cudaEventCreate(&e1));
  for (const Shape& s : shapes) {
    const std::size_t w_elems = std::size_t(s.n * s.k);
    const double w_bytes = double(w_elems) * 2.0;
    // Enough copies that the rotation reads at least 512 MB between two uses of one.
    const int copies = int(std::max<double>(2.0, std::ceil(512e6 / w_bytes)));
    std::vector<__nv_bfloat16*> ws(std::size_t(copies), nullptr);
    for (int c = 0; c < copies; ++c) {
      INFERSCALE_CUDA_CHECK(cudaMalloc(&ws[std::size_t(c)], w_elems * 2));
      fill(ws[std::size_t(c)], w_elems, 17u + std::uint32_t(c), 0.05f);
    }
    for (const std::int64_t rows : row_counts) {
      if (std::string(s.name) == "lm_head" && rows != 1) continue;
      __nv_bfloat16 *x = nullptr, *out = nullptr, *ref = nullptr;
      INFERSCALE_CUDA_CHECK(cudaMalloc(&x, std::size_t(rows * s.k) * 2));
      INFERSCALE_CUDA_CHECK(cudaMalloc(&out, std::size_t(rows * s.n) * 2));
      INFERSCALE_CUDA_CHECK(cudaMalloc(&ref, std::size_t(rows * s.n) * 2));
      fill(x, std::size_t(rows * s.k), 5u, 2.0f);
      const float alpha = 1.0f, beta = 0.0f;
      // out[rows, n] = x[rows, k] w[n, k]^T: column-major out^T[n, rows] = w^T' x^T'.
      auto cublas = [&](const __nv_bfloat16* w, __nv_bfloat16* o) {
        CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, int(s.n), int(rows), int(s.k),
                                  &alpha, w, CUDA_R_16BF, int(s.k), x, CUDA_R_16BF, int(s.k), &beta,
                                  o, CUDA_R_16BF, int(s.n), CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT));
      };
      auto time = [&](auto&& launch) {
        for (int i = 0; i < 3; ++i) launch(ws[std::size_t(i % copies)], out);
        INFERSCALE_CUDA_CHECK(cudaEventRecord(e0, stream));
        for (int i = 0; i < reps; ++i) launch(ws[std::size_t(i % copies)], out);
        INFERSCALE_CUDA_CHECK(cudaEventRecord(e1, stream));
        INFERSCALE_CUDA_CHECK(cudaEventSynchronize(e1));
        float ms = 0;
        INFERSCALE_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        return 1000.0 * ms / reps;
      };
      // The reference: cuBLAS on copy 0.
      cublas(ws[0], ref);
      INFERSCALE_CUDA_CHECK(cudaStreamSynchronize(stream));
      std::vector<__nv_bfloat16> want(std::size_t(rows * s.n)), got(want.size());
      INFERSCALE_CUDA_CHECK(cudaMemcpy(want.data(), ref, want.size() * 2, cudaMemcpyDeviceToHost));
      float scale = 0.0f;
      for (const auto v : want) scale = std::max(scale, std::fabs(__bfloat162float(v)));
      auto check = [&]() {
        INFERSCALE_CUDA_CHECK(cudaStreamSynchronize(stream));
        INFERSCALE_CUDA_CHECK(cudaMemcpy(got.data(), out, got.size() * 2, cudaMemcpyDeviceToHost));
        float worst = 0.0f;
        for (std::size_t i = 0; i < got.size(); ++i) {
          worst = std::max(worst, std::fabs(__bfloat162float(got[i]) - __bfloat162float(want[i])));
        }
        return scale > 0 ? worst / scale : worst;
      };
      auto row = [&](const std::string& config, double us, float diff) {
        std::printf("| %s | %lld | %lld | %lld | %s | %.1f | %.2f | %.1e |\n", s.name,
                    (long long)rows, (long long)s.n, (long long)s.k, config.c_str(), us,
                    w_bytes / us / 1e6, diff);
        std::fflush(stdout);
      };
      const double cublas_us =
          time([&](const __nv_bfloat16* w, __nv_bfloat16* o) { cublas(w, o); });
      cublas(ws[0], out);
      row("cuBLAS", cublas_us, check());

      for (int v = 0; v < kSkinnyGemmVariants; ++v) {
        for (const bool split : {false, true}) {
          SkinnyGemmParams p;
          p.rows = rows;
          p.n = s.n;
          p.k = s.k;
          p.x = x;
          p.x_stride = s.k;
          p.w_stride = s.k;
          p.out = out;
          p.out_stride = s.n;
          p.dtype = DType::kBF16;
          p.variant = v;
          p.splits = split ? skinny_gemm_splits(p, sms) : 1;
          if (split && p.splits == 1) continue;
          float* workspace = nullptr;
          std::uint32_t* counters = nullptr;
          if (p.splits > 1) {
            INFERSCALE_CUDA_CHECK(
                cudaMalloc(&workspace, std::size_t(p.splits * rows * s.n) * sizeof(float)));
            INFERSCALE_CUDA_CHECK(cudaMalloc(
                &counters, std::size_t(skinny_gemm_counters(p)) * sizeof(std::uint32_t)));
            INFERSCALE_CUDA_CHECK(cudaMemset(
                counters, 0, std::size_t(skinny_gemm_counters(p)) * sizeof(std::uint32_t)));
            p.workspace = workspace;
            p.counters = counters;
          }
          auto launch = [&](const __nv_bfloat16* w, __nv_bfloat16* o) {
            SkinnyGemmParams q = p;
            q.w = w;
            q.out = o;
            INFERSCALE_CUDA_CHECK(skinny_gemm_launch(q, stream));
          };
          const double us = time(launch);
          launch(ws[0], out);
          char name[64];
          std::snprintf(name, sizeof name, "variant %d%s", v,
                        p.splits > 1 ? (" split " + std::to_string(p.splits)).c_str() : "");
          row(name, us, check());
          cudaFree(workspace);
          cudaFree(counters);
        }
      }
      cudaFree(x);
      cudaFree(out);
      cudaFree(ref);
    }
    for (auto* w : ws) cudaFree(w);
  }
  cublasDestroy(handle);
  return 0;
}
