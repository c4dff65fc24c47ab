// RMSNorm kernel: a block per row; a first pass sums squares (device::block_inv_rms), a second
// pass scales. Rows are re-read from L1/L2, not device memory.
#include "kernels/device_utils.cuh"
#include "kernels/rms_norm.cuh"

namespace inferscale {
namespace {

constexpr int kBlock = 256;

template <typename T, int V>
__global__ void rms_norm_kernel(RmsNormParams p) {
  const std::int64_t r = blockIdx.x;
  const T* x = static_cast<const T*>(p.x) + r * p.x_stride;
  T* out = static_cast<T*>(p.out) + r * p.out_stride;
  const T* w = static_cast<const T*>(p.weight);
  const int vecs = int(p.cols / V);
  const float s = device::block_inv_rms<T, V>(x, p.cols, p.eps);
  for (int i = threadIdx.x; i < vecs; i += blockDim.x) {
    const device::Vec<T, V> v = reinterpret_cast<const device::Vec<T, V>*>(x)[i];
    const device::Vec<T, V> g = reinterpret_cast<const device::Vec<T, V>*>(w)[i];
    device::Vec<T, V> y;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      y.v[j] = device::from_f32<T>(device::to_f32(v.v[j]) * s * device::to_f32(g.v[j]));
    }
    reinterpret_cast<device::Vec<T, V>*>(out)[i] = y;
  }
}

template <typename T>
struct RmsNormLaunch {
  static cudaError_t run(const RmsNormParams& p, cudaStream_t stream) {
    constexpr int kV = device::kVec16<T>;
    const bool vec = p.cols % kV == 0 && p.x_stride % kV == 0 && p.out_stride % kV == 0 &&
                     device::aligned16(p.x) && device::aligned16(p.out) &&
                     device::aligned16(p.weight);
    const unsigned rows = unsigned(p.rows);
    if (vec) {
      rms_norm_kernel<T, kV><<<rows, kBlock, 0, stream>>>(p);
    } else {
      rms_norm_kernel<T, 1><<<rows, kBlock, 0, stream>>>(p);
    }
    return cudaGetLastError();
  }
};

}  // namespace

cudaError_t rms_norm_launch(const RmsNormParams& p, cudaStream_t stream) {
  if (p.rows == 0) return cudaSuccess;
  if (p.cols <= 0) return cudaErrorInvalidValue;
  return device::dispatch_dtype<RmsNormLaunch>(p.dtype, p, stream);
}

}  // namespace inferscale
