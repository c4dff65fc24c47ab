// SwiGLU kernel. Without a folded norm: a grid-stride loop over V-element vectors of the output.
// With one: grid x = row, y (with the block's threads) = the row's vectors; each block first
// reduces the row's residual (hidden elements, read from L2) to its 1 / rms, then scales gate and
// up by it. Decode-sized batches give each thread one vector (more blocks in flight); larger ones
// four, so that a row's residual is re-read by fewer blocks.
#include "kernels/device_utils.cuh"
#include "kernels/launch.cuh"
#include "kernels/silu_mul.cuh"

namespace inferscale {
namespace {

constexpr int kBlock = 256;

template <typename T, int V>
__device__ __forceinline__ void silu_mul_vec(const SiluMulParams& p, std::int64_t r, std::int64_t c,
                                             bool scaled, float s) {
  const T* in = static_cast<const T*>(p.gate_up) + r * p.in_stride;
  const device::Vec<T, V> g = *reinterpret_cast<const device::Vec<T, V>*>(in + c);
  const device::Vec<T, V> u = *reinterpret_cast<const device::Vec<T, V>*>(in + p.cols + c);
  device::Vec<T, V> y;
#pragma unroll
  for (int j = 0; j < V; ++j) {
    float gf = device::to_f32(g.v[j]), uf = device::to_f32(u.v[j]);
    if (scaled) {
      gf = __fmul_rn(gf, s);
      uf = __fmul_rn(uf, s);
    }
    y.v[j] = device::from_f32<T>(gf / (1.0f + expf(-gf)) * uf);
  }
  *reinterpret_cast<device::Vec<T, V>*>(static_cast<T*>(p.out) + r * p.out_stride + c) = y;
}

template <typename T, int V>
__global__ void silu_mul_kernel(SiluMulParams p) {
  device::wait_for_prior_grids();   // the gate/up product
  device::allow_dependent_grids();  // the down product may start loading its weights
  const std::int64_t per_row = p.cols / V;
  const std::int64_t total = p.rows * per_row;
  for (std::int64_t idx = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    silu_mul_vec<T, V>(p, idx / per_row, (idx % per_row) * V, false, 1.0f);
  }
}

template <typename T, int V>
__global__ void silu_mul_scaled_kernel(SiluMulParams p) {
  device::wait_for_prior_grids();  // the gate/up product and the residual
  device::allow_dependent_grids();
  const std::int64_t r = blockIdx.x;
  const float s = device::block_rms_scale<T>(p.norm, r);
  const std::int64_t per_row = p.cols / V;
  for (std::int64_t i = std::int64_t(blockIdx.y) * blockDim.x + threadIdx.x; i < per_row;
       i += std::int64_t(gridDim.y) * blockDim.x) {
    silu_mul_vec<T, V>(p, r, i * V, true, s);
  }
}

template <typename T>
struct SiluMulLaunch {
  static cudaError_t run(const SiluMulParams& p, cudaStream_t stream) {
    constexpr int kV = device::kVec16<T>;
    const bool vec = p.cols % kV == 0 && p.in_stride % kV == 0 && p.out_stride % kV == 0 &&
                     device::aligned16(p.gate_up) && device::aligned16(p.out);
    const int v = vec ? kV : 1;
    if (p.norm.x != nullptr) {
      const std::int64_t per_thread = p.rows <= 128 ? 1 : 4;
      const std::int64_t per_row = p.cols / v;
      std::int64_t ys = (per_row + kBlock * per_thread - 1) / (kBlock * per_thread);
      if (ys > 65535) ys = 65535;
      const dim3 grid(unsigned(p.rows), unsigned(ys));
      return device::launch_kernel(
          vec ? silu_mul_scaled_kernel<T, kV> : silu_mul_scaled_kernel<T, 1>, grid, dim3(kBlock), 0,
          stream, p);
    }
    return device::launch_kernel(vec ? silu_mul_kernel<T, kV> : silu_mul_kernel<T, 1>,
                                 dim3(device::grid_for(p.rows * (p.cols / v), kBlock)),
                                 dim3(kBlock), 0, stream, p);
  }
};

}  // namespace

cudaError_t silu_mul_launch(const SiluMulParams& p, cudaStream_t stream) {
  if (p.rows == 0 || p.cols == 0) return cudaSuccess;
  if (p.norm.x != nullptr && p.norm.cols <= 0) return cudaErrorInvalidValue;
  if (p.rows > 0x7fffffff) return cudaErrorInvalidValue;
  return device::dispatch_dtype<SiluMulLaunch>(p.dtype, p, stream);
}

}  // namespace inferscale
