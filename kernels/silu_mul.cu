// SwiGLU kernel: a grid-stride loop over V-element vectors of the output.
#include "kernels/device_utils.cuh"
#include "kernels/silu_mul.cuh"

namespace inferscale {
namespace {

template <typename T, int V>
__global__ void silu_mul_kernel(SiluMulParams p) {
  const std::int64_t per_row = p.cols / V;
  const std::int64_t total = p.rows * per_row;
  for (std::int64_t idx = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t r = idx / per_row;
    const std::int64_t c = (idx % per_row) * V;
    const T* in = static_cast<const T*>(p.gate_up) + r * p.in_stride;
    const device::Vec<T, V> g = *reinterpret_cast<const device::Vec<T, V>*>(in + c);
    const device::Vec<T, V> u = *reinterpret_cast<const device::Vec<T, V>*>(in + p.cols + c);
    device::Vec<T, V> y;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const float gf = device::to_f32(g.v[j]);
      y.v[j] = device::from_f32<T>(gf / (1.0f + expf(-gf)) * device::to_f32(u.v[j]));
    }
    *reinterpret_cast<device::Vec<T, V>*>(static_cast<T*>(p.out) + r * p.out_stride + c) = y;
  }
}

template <typename T>
struct SiluMulLaunch {
  static cudaError_t run(const SiluMulParams& p, cudaStream_t stream) {
    constexpr int kV = device::kVec16<T>;
    const bool vec = p.cols % kV == 0 && p.in_stride % kV == 0 && p.out_stride % kV == 0 &&
                     device::aligned16(p.gate_up) && device::aligned16(p.out);
    constexpr int kBlock = 256;
    if (vec) {
      silu_mul_kernel<T, kV>
          <<<device::grid_for(p.rows * (p.cols / kV), kBlock), kBlock, 0, stream>>>(p);
    } else {
      silu_mul_kernel<T, 1><<<device::grid_for(p.rows * p.cols, kBlock), kBlock, 0, stream>>>(p);
    }
    return cudaGetLastError();
  }
};

}  // namespace

cudaError_t silu_mul_launch(const SiluMulParams& p, cudaStream_t stream) {
  if (p.rows == 0 || p.cols == 0) return cudaSuccess;
  return device::dispatch_dtype<SiluMulLaunch>(p.dtype, p, stream);
}

}  // namespace inferscale
