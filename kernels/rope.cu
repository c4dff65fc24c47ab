// Rotary embedding kernel: each thread rotates one chunk (V pairs) of one head vector.
#include "kernels/device_utils.cuh"
#include "kernels/rope.cuh"

namespace inferscale {
namespace {

template <typename T, int V, bool Forward>
__global__ void rope_rotate_kernel(RopeParams p) {
  const int half = p.head_dim / 2;
  const int chunks = p.head_dim / (2 * V);
  const std::int64_t total = std::int64_t(p.tokens) * p.heads * chunks;
  for (std::int64_t idx = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += std::int64_t(gridDim.x) * blockDim.x) {
    const int c = int(idx % chunks);
    const std::int64_t r = idx / chunks;
    const int h = int(r % p.heads);
    const std::int64_t t = r / p.heads;
    const int pos = p.positions[t];
    const int row = pos < 0 ? -pos : pos;
    const std::int64_t off = t * p.token_stride + h * p.head_stride;
    device::RowChunk<T, V> x;
    x.load(static_cast<const T*>(p.in) + off, c, half, p.style);
    x.template rotate<Forward>(p.table.cos + std::int64_t(row) * half,
                               p.table.sin + std::int64_t(row) * half, c, pos < 0, p.style);
    x.store(static_cast<T*>(p.out) + off, c, half, p.style);
  }
}

template <bool Forward>
struct RopeLaunch {
  template <typename T>
  struct Typed {
    static cudaError_t run(const RopeParams& p, cudaStream_t stream) {
      constexpr int kV = device::kVec16<T>;
      const bool vec = p.head_dim % (2 * kV) == 0 && p.token_stride % kV == 0 &&
                       p.head_stride % kV == 0 && device::aligned16(p.in) &&
                       device::aligned16(p.out) && device::aligned16(p.table.cos) &&
                       device::aligned16(p.table.sin);
      constexpr int kBlock = 256;
      if (vec) {
        const std::int64_t total = std::int64_t(p.tokens) * p.heads * (p.head_dim / (2 * kV));
        rope_rotate_kernel<T, kV, Forward>
            <<<device::grid_for(total, kBlock), kBlock, 0, stream>>>(p);
      } else {
        const std::int64_t total = std::int64_t(p.tokens) * p.heads * (p.head_dim / 2);
        rope_rotate_kernel<T, 1, Forward>
            <<<device::grid_for(total, kBlock), kBlock, 0, stream>>>(p);
      }
      return cudaGetLastError();
    }
  };
};

}  // namespace

template <bool Forward>
cudaError_t rope_rotate_launch(const RopeParams& p, cudaStream_t stream) {
  if (p.tokens == 0 || p.heads == 0) return cudaSuccess;
  if (p.head_dim <= 0 || p.head_dim % 2 != 0) return cudaErrorInvalidValue;
  return device::dispatch_dtype<RopeLaunch<Forward>::template Typed>(p.dtype, p, stream);
}

template cudaError_t rope_rotate_launch<true>(const RopeParams&, cudaStream_t);
template cudaError_t rope_rotate_launch<false>(const RopeParams&, cudaStream_t);

}  // namespace inferscale
