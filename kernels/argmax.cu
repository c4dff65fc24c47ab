// Greedy sampling. One block per row: each thread scans a strided share of the row (16-byte
// vectors where the row allows, four loads in flight), keeping its best (value, column); the
// warps, then the block, reduce those pairs. A pair beats another when its value is NaN and the
// other's is not, or its value is larger, or the values are equal (or both NaN) and its column is
// smaller: the first maximum, as at::argmax. A 128k-column vocabulary row is 256 KB of bf16, read
// by one SM.
#include <cmath>

#include "kernels/argmax.cuh"
#include "kernels/device_utils.cuh"
#include "kernels/launch.cuh"

namespace inferscale {
namespace {

constexpr int kBlock = 1024;
constexpr int kLoads = 4;
constexpr unsigned kFull = 0xffffffffu;

struct Best {
  float v;
  std::int64_t c;
};

__device__ __forceinline__ bool beats(float v, std::int64_t c, const Best& b) {
  const bool vn = isnan(v), bn = isnan(b.v);
  if (vn != bn) return vn;
  if (!vn && v != b.v) return v > b.v;
  return c < b.c;
}

__device__ __forceinline__ void take(Best& b, float v, std::int64_t c) {
  if (beats(v, c, b)) b = Best{v, c};
}

/// The best pair of the warp, in every lane.
__device__ __forceinline__ void warp_best(Best& b) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    const float v = __shfl_xor_sync(kFull, b.v, off);
    const std::int64_t c = __shfl_xor_sync(kFull, b.c, off);
    take(b, v, c);
  }
}

template <typename T, int V>
__global__ void __launch_bounds__(kBlock) argmax_kernel(ArgmaxParams p) {
  device::wait_for_prior_grids();  // the LM head's product
  device::allow_dependent_grids();
  const std::int64_t r = blockIdx.x;
  const T* row = static_cast<const T*>(p.in) + r * p.stride;
  Best b{-INFINITY, p.cols};  // any column beats it: -inf ties lose only to smaller columns
  const std::int64_t vecs = p.cols / V;
  const auto* rv = reinterpret_cast<const device::Vec<T, V>*>(row);
  std::int64_t i = threadIdx.x;
  // kLoads vectors in flight per thread: one at a time left each thread waiting out a load
  // latency per vector (26 us for a 128k-column bf16 row on the H200, ncu).
  for (; i + (kLoads - 1) * kBlock < vecs; i += kLoads * kBlock) {
    device::Vec<T, V> x[kLoads];
#pragma unroll
    for (int u = 0; u < kLoads; ++u) x[u] = rv[i + u * kBlock];
#pragma unroll
    for (int u = 0; u < kLoads; ++u) {
#pragma unroll
      for (int j = 0; j < V; ++j) take(b, device::to_f32(x[u].v[j]), (i + u * kBlock) * V + j);
    }
  }
  for (; i < vecs; i += kBlock) {
    const device::Vec<T, V> x = rv[i];
#pragma unroll
    for (int j = 0; j < V; ++j) take(b, device::to_f32(x.v[j]), i * V + j);
  }
  for (std::int64_t c = vecs * V + threadIdx.x; c < p.cols; c += kBlock) {
    take(b, device::to_f32(row[c]), c);
  }
  warp_best(b);
  __shared__ Best warps[kBlock / 32];
  const int warp = int(threadIdx.x) >> 5, lane = int(threadIdx.x) & 31;
  if (lane == 0) warps[warp] = b;
  __syncthreads();
  if (warp != 0) return;
  b = lane < kBlock / 32 ? warps[lane] : Best{-INFINITY, p.cols};
  warp_best(b);
  if (lane == 0) p.out[r] = std::int32_t(b.c < p.cols ? b.c : 0);
}

template <typename T>
cudaError_t launch_t(const ArgmaxParams& p, cudaStream_t stream) {
  constexpr int kV = device::kVec16<T>;
  const bool vec = p.stride % kV == 0 && device::aligned16(p.in);
  return device::launch_kernel(vec ? argmax_kernel<T, kV> : argmax_kernel<T, 1>,
                               dim3(unsigned(p.rows)), dim3(kBlock), 0, stream, p);
}

}  // namespace

cudaError_t argmax_launch(const ArgmaxParams& p, cudaStream_t stream) {
  if (p.rows < 0 || p.cols < 1 || p.stride < p.cols || p.rows > 2147483647) {
    return cudaErrorInvalidValue;
  }
  if (p.rows == 0) return cudaSuccess;
  switch (p.dtype) {
    case DType::kBF16:
      return launch_t<__nv_bfloat16>(p, stream);
    case DType::kF16:
      return launch_t<__half>(p, stream);
    case DType::kF32:
      break;
  }
  return launch_t<float>(p, stream);
}

}  // namespace inferscale
