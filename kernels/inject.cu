// Fused injection kernel. Grid: x = injected token, y (with the block's threads) = the token's
// (layer, kv head, chunk) items. Each thread reads 2 K and 2 V vectors of 16 bytes from the
// pool, rotates K with the shared RowChunk routine, and writes both into the cache.
#include "kernels/device_utils.cuh"
#include "kernels/inject.cuh"
#include "kernels/launch.cuh"

namespace inferscale {
namespace {

template <typename T, int V>
__global__ void kv_inject_kernel(InjectParams p) {
  device::wait_for_prior_grids();  // the step's index arrays
  device::allow_dependent_grids();
  const int t = blockIdx.x;
  const int half = p.head_dim / 2;
  const int chunks = p.head_dim / (2 * V);
  const int items = p.layers * p.kv_heads * chunks;
  const int src = p.src_slots[t];
  const int dst = p.dst_slots[t];
  const int pos = p.positions[t];
  const int row_elems = p.kv_heads * p.head_dim;
  const std::int64_t src_base = std::int64_t(src / p.pool.block_tokens) * p.pool.block_stride +
                                std::int64_t(src % p.pool.block_tokens) * row_elems;
  const std::int64_t dst_base = std::int64_t(dst) * row_elems;
  const int table_row = pos < 0 ? -pos : pos;
  const float* cos_row = p.table.cos + std::int64_t(table_row) * half;
  const float* sin_row = p.table.sin + std::int64_t(table_row) * half;
  const T* pool_k = static_cast<const T*>(p.pool.k);
  const T* pool_v = static_cast<const T*>(p.pool.v);
  for (int item = blockIdx.y * blockDim.x + threadIdx.x; item < items;
       item += gridDim.y * blockDim.x) {
    const int c = item % chunks;
    const int r = item / chunks;
    const int h = r % p.kv_heads;
    const int l = r / p.kv_heads;
    const std::int64_t s = src_base + l * p.pool.layer_stride + h * p.head_dim;
    const std::int64_t d = l * p.cache_layer_stride + dst_base + h * p.head_dim;
    device::RowChunk<T, V> k, v;  // both loads issued before any store
    k.load(pool_k + s, c, half, p.style);
    v.load(pool_v + s, c, half, p.style);
    k.template rotate<true>(cos_row, sin_row, c, pos < 0, p.style);
    k.store(static_cast<T*>(p.cache_k) + d, c, half, p.style);
    v.store(static_cast<T*>(p.cache_v) + d, c, half, p.style);
  }
}

template <typename T>
struct InjectLaunch {
  static cudaError_t run(const InjectParams& p, cudaStream_t stream) {
    constexpr int kV = device::kVec16<T>;
    const bool vec = p.head_dim % (2 * kV) == 0 && p.pool.block_stride % kV == 0 &&
                     p.pool.layer_stride % kV == 0 && p.cache_layer_stride % kV == 0 &&
                     device::aligned16(p.pool.k) && device::aligned16(p.pool.v) &&
                     device::aligned16(p.cache_k) && device::aligned16(p.cache_v) &&
                     device::aligned16(p.table.cos) && device::aligned16(p.table.sin);
    const int chunks = p.head_dim / (2 * (vec ? kV : 1));
    const int items = p.layers * p.kv_heads * chunks;
    const int block = items >= 256 ? 256 : ((items + 31) / 32) * 32;
    int ys = (items + block - 1) / block;
    if (ys > 65535) ys = 65535;
    const dim3 grid(unsigned(p.tokens), unsigned(ys));
    return device::launch_kernel(vec ? kv_inject_kernel<T, kV> : kv_inject_kernel<T, 1>, grid,
                                 dim3(unsigned(block)), 0, stream, p);
  }
};

}  // namespace

cudaError_t kv_inject_launch(const InjectParams& p, cudaStream_t stream) {
  if (p.tokens == 0 || p.layers == 0) return cudaSuccess;
  if (p.head_dim <= 0 || p.head_dim % 2 != 0) return cudaErrorInvalidValue;
  return device::dispatch_dtype<InjectLaunch>(p.dtype, p, stream);
}

}  // namespace inferscale
