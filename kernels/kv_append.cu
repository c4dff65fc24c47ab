// KV append kernel. Grid: x = token, y (with the block's threads) = the token's row chunks:
// q heads, then k heads, then v heads, each head_dim / (2V) chunks. With a folded norm every
// block of a token first reduces the token's residual row (hidden elements, read from L2) to its
// 1 / rms; the few blocks of a token repeat that reduction rather than launch another kernel.
#include "kernels/device_utils.cuh"
#include "kernels/kv_append.cuh"
#include "kernels/launch.cuh"

namespace inferscale {
namespace {

template <typename T, int V>
__global__ void kv_append_kernel(KvAppendParams p) {
  device::wait_for_prior_grids();  // the QKV product and the step's index arrays
  device::allow_dependent_grids();
  const int t = blockIdx.x;
  const int half = p.head_dim / 2;
  const int chunks = p.head_dim / (2 * V);
  const int items = (p.heads + 2 * p.kv_heads) * chunks;
  const int pos = p.positions[t];
  const int table_row = pos < 0 ? -pos : pos;
  const float* cos_row = p.table.cos + std::int64_t(table_row) * half;
  const float* sin_row = p.table.sin + std::int64_t(table_row) * half;
  const int row_elems = p.kv_heads * p.head_dim;
  const T* in = static_cast<const T*>(p.qkv) + std::int64_t(t) * p.qkv_stride;
  const std::int64_t cache_base = std::int64_t(p.cache_slots[t]) * row_elems;
  const int pool_slot = (p.pool_slots != nullptr && p.pool.k != nullptr) ? p.pool_slots[t] : -1;
  const std::int64_t pool_base =
      pool_slot < 0 ? 0
                    : std::int64_t(pool_slot / p.pool.block_tokens) * p.pool.block_stride +
                          std::int64_t(pool_slot % p.pool.block_tokens) * row_elems;
  const bool scaled = p.norm.x != nullptr;  // the same for the whole grid
  const float inv_rms = scaled ? device::block_rms_scale<T>(p.norm, t) : 1.0f;
  for (int item = blockIdx.y * blockDim.x + threadIdx.x; item < items;
       item += gridDim.y * blockDim.x) {
    const int c = item % chunks;
    const int r = item / chunks;  // row: q heads, k heads, v heads
    device::RowChunk<T, V> x;
    x.load(in + std::int64_t(r) * p.head_dim, c, half, p.style);
    if (scaled) x.scale(inv_rms);  // rounded here: the pool's K and V are these values
    if (r < p.heads) {
      x.template rotate<true>(cos_row, sin_row, c, pos < 0, p.style);
      x.store(static_cast<T*>(p.q_out) + (std::int64_t(t) * p.heads + r) * p.head_dim, c, half,
              p.style);
    } else if (r < p.heads + p.kv_heads) {
      const int h = r - p.heads;
      if (pool_slot >= 0 && !p.pool_rotated) {
        x.store(static_cast<T*>(p.pool.k) + pool_base + h * p.head_dim, c, half, p.style);
      }
      x.template rotate<true>(cos_row, sin_row, c, pos < 0, p.style);
      x.store(static_cast<T*>(p.cache_k) + cache_base + h * p.head_dim, c, half, p.style);
      if (pool_slot >= 0 && p.pool_rotated) {
        x.store(static_cast<T*>(p.pool.k) + pool_base + h * p.head_dim, c, half, p.style);
      }
    } else {
      const int h = r - p.heads - p.kv_heads;
      x.store(static_cast<T*>(p.cache_v) + cache_base + h * p.head_dim, c, half, p.style);
      if (pool_slot >= 0) {
        x.store(static_cast<T*>(p.pool.v) + pool_base + h * p.head_dim, c, half, p.style);
      }
    }
  }
}

template <typename T>
struct KvAppendLaunch {
  static cudaError_t run(const KvAppendParams& p, cudaStream_t stream) {
    constexpr int kV = device::kVec16<T>;
    const bool vec =
        p.head_dim % (2 * kV) == 0 && p.qkv_stride % kV == 0 && device::aligned16(p.qkv) &&
        device::aligned16(p.q_out) && device::aligned16(p.cache_k) &&
        device::aligned16(p.cache_v) && device::aligned16(p.table.cos) &&
        device::aligned16(p.table.sin) &&
        (p.pool.k == nullptr || (device::aligned16(p.pool.k) && device::aligned16(p.pool.v) &&
                                 p.pool.block_stride % kV == 0));
    const int chunks = p.head_dim / (2 * (vec ? kV : 1));
    const int items = (p.heads + 2 * p.kv_heads) * chunks;
    const int block = items >= 256 ? 256 : ((items + 31) / 32) * 32;
    int ys = (items + block - 1) / block;
    if (ys > 65535) ys = 65535;
    const dim3 grid(unsigned(p.tokens), unsigned(ys));
    return device::launch_kernel(vec ? kv_append_kernel<T, kV> : kv_append_kernel<T, 1>, grid,
                                 dim3(unsigned(block)), 0, stream, p);
  }
};

}  // namespace

cudaError_t kv_append_launch(const KvAppendParams& p, cudaStream_t stream) {
  if (p.tokens == 0) return cudaSuccess;
  if (p.head_dim <= 0 || p.head_dim % 2 != 0) return cudaErrorInvalidValue;
  if (p.norm.x != nullptr && p.norm.cols <= 0) return cudaErrorInvalidValue;
  return device::dispatch_dtype<KvAppendLaunch>(p.dtype, p, stream);
}

}  // namespace inferscale
