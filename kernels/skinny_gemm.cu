// Skinny matrix product: out[rows, n] = x[rows, k] w[n, k]^T (+ residual) for rows <= 32.
//
// Grid: x = block of 32 weight rows (output columns), y = split of K (p.splits contiguous ranges
// of 32-element chunks, so that narrow products still put several blocks on every SM). A block
// has eight warps; warp v takes the chunks v, v + 8, v + 16, ... of its range, so the block reads
// 512 contiguous bytes of each of its 32 weight rows per round, and each warp keeps fp32 partial
// sums of all rows x 32 outputs in mma accumulators (four n-tiles of 8, one or two m-tiles of 16).
// The partials of the eight warps are added in shared memory; with one split the residual is added
// and the sum rounded once. With several, each block writes its fp32 sums to the workspace and
// counts itself done; the last block of a column adds the splits' sums in split order, then the
// residual, rounds, and resets the counter for the next launch.
//
// Operands straight from global memory, without shared memory or ldmatrix: lane (g, t) loads 16
// bytes, elements 8t .. 8t + 7 of a chunk, of weight row g of each n-tile and of rows g and g + 8
// of each m-tile of x. A dot product does not depend on the order of its terms, so the mma's
// logical k index may be any permutation of the physical one that both operands share: the
// first mma of a chunk takes elements {0..3} of every lane's 8 as the fragment's k {2t, 2t + 1,
// 2t + 8, 2t + 9}, the second elements {4..7}. Weights are read with streaming loads (each is
// read once), x through the read-only cache (every block reads all of it).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "kernels/device_utils.cuh"
#include "kernels/mma.cuh"
#include "kernels/skinny_gemm.cuh"

namespace inferscale {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kNTiles = 4;                     // n-tiles of 8 weight rows per block
constexpr int kBlockCols = kNTiles * 8;        // output columns per block
constexpr int kChunk = 32;                     // k elements per warp step (two mma k-steps)
[[maybe_unused]] constexpr int kInFlight = 2;  // chunks each warp loads before multiplying
[[maybe_unused]] constexpr int kRedStride =
    kBlockCols + 4;  // shared-memory row of partial sums (floats)

using device::Mma;

template <typename T, int MT>
__global__ void __launch_bounds__(kThreads, 2) skinny_gemm_kernel(SkinnyGemmParams p) {
#if INFERSCALE_MMA_BODY
  __shared__ float red[kWarps][MT * 16][kRedStride];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const std::int64_t n0 = std::int64_t(blockIdx.x) * kBlockCols;
  const T* w = static_cast<const T*>(p.w);
  const T* x = static_cast<const T*>(p.x);

  // This lane's 16-byte column of every operand row, as uint4 pointers at chunk 0.
  const uint4* wrow[kNTiles];
  bool wlive[kNTiles];
#pragma unroll
  for (int nt = 0; nt < kNTiles; ++nt) {
    const std::int64_t n = n0 + nt * 8 + g;
    wlive[nt] = n < p.n;
    wrow[nt] = reinterpret_cast<const uint4*>(w + (wlive[nt] ? n : 0) * p.w_stride + t * 8);
  }
  const uint4* xrow[MT][2];
  bool xlive[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const std::int64_t r = mt * 16 + h * 8 + g;
      xlive[mt][h] = r < p.rows;
      xrow[mt][h] = reinterpret_cast<const uint4*>(x + (xlive[mt][h] ? r : 0) * p.x_stride + t * 8);
    }
  }

  float acc[MT][kNTiles][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][nt][e] = 0.0f;
    }
  }

  const int chunks = int(p.k / kChunk);
  const int per_split = (chunks + p.splits - 1) / p.splits;
  const int c_begin = int(blockIdx.y) * per_split;
  const int c_end = min(chunks, c_begin + per_split);
  const uint4 zero = make_uint4(0, 0, 0, 0);
  for (int c0 = c_begin + warp; c0 < c_end; c0 += kWarps * kInFlight) {
    uint4 b[kInFlight][kNTiles];
    uint4 a[kInFlight][MT][2];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const int c = c0 + u * kWarps;
      const bool live = c < c_end;
      const int off = c * (kChunk / 8);  // uint4s
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt) {
        b[u][nt] = live && wlive[nt] ? __ldcs(wrow[nt] + off) : zero;
      }
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          a[u][mt][h] = live && xlive[mt][h] ? __ldg(xrow[mt][h] + off) : zero;
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        const std::uint32_t lo[4] = {a[u][mt][0].x, a[u][mt][1].x, a[u][mt][0].y, a[u][mt][1].y};
        const std::uint32_t hi[4] = {a[u][mt][0].z, a[u][mt][1].z, a[u][mt][0].w, a[u][mt][1].w};
#pragma unroll
        for (int nt = 0; nt < kNTiles; ++nt) {
          Mma<T>::mma(acc[mt][nt], lo, b[u][nt].x, b[u][nt].y);
          Mma<T>::mma(acc[mt][nt], hi, b[u][nt].z, b[u][nt].w);
        }
      }
    }
  }

#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) {
      const int col = nt * 8 + 2 * t;
      red[warp][mt * 16 + g][col] = acc[mt][nt][0];
      red[warp][mt * 16 + g][col + 1] = acc[mt][nt][1];
      red[warp][mt * 16 + g + 8][col] = acc[mt][nt][2];
      red[warp][mt * 16 + g + 8][col + 1] = acc[mt][nt][3];
    }
  }
  __syncthreads();
  T* out = static_cast<T*>(p.out);
  const T* residual = static_cast<const T*>(p.residual);
  auto finish = [&](int r, std::int64_t n, float s) {
    const std::int64_t o = r * p.out_stride + n;
    if (residual != nullptr) s += device::to_f32(residual[o]);
    out[o] = device::from_f32<T>(s);
  };
  // Calls f(r, n, sum of the warps' partials) for each of the block's outputs in range.
  auto each_output = [&](auto&& f) {
    for (int i = threadIdx.x; i < MT * 16 * kBlockCols; i += kThreads) {
      const int r = i / kBlockCols, col = i % kBlockCols;
      const std::int64_t n = n0 + col;
      if (r >= p.rows || n >= p.n) continue;
      float s = 0.0f;
#pragma unroll
      for (int v = 0; v < kWarps; ++v) s += red[v][r][col];
      f(r, n, s);
    }
  };
  if (p.splits == 1) {
    each_output(finish);
    return;
  }
  // Several splits: this block's sums to the workspace, then the last block of the column adds.
  const std::int64_t plane = p.rows * p.n;
  float* ws = p.workspace + std::int64_t(blockIdx.y) * plane;
  each_output([&](int r, std::int64_t n, float s) { ws[r * p.n + n] = s; });
  __threadfence();
  __syncthreads();
  __shared__ bool last;
  if (threadIdx.x == 0) last = atomicAdd(&p.counters[blockIdx.x], 1u) == unsigned(p.splits - 1);
  __syncthreads();
  if (!last) return;
  __threadfence();
  for (int i = threadIdx.x; i < MT * 16 * kBlockCols; i += kThreads) {
    const int r = i / kBlockCols, col = i % kBlockCols;
    const std::int64_t n = n0 + col;
    if (r >= p.rows || n >= p.n) continue;
    float s = 0.0f;
    for (int z = 0; z < p.splits; ++z) s += __ldcg(p.workspace + z * plane + r * p.n + n);
    finish(r, n, s);
  }
  if (threadIdx.x == 0) p.counters[blockIdx.x] = 0;
#endif
}

template <typename T, int MT>
cudaError_t launch_tiles(const SkinnyGemmParams& p, cudaStream_t stream) {
  // Device code compiled for a target before sm_80 is empty: refuse it (checked once).
  static const cudaError_t usable = [] {
    cudaFuncAttributes attrs{};
    const cudaError_t e = cudaFuncGetAttributes(&attrs, skinny_gemm_kernel<T, MT>);
    if (e != cudaSuccess) return e;
    return attrs.ptxVersion < 80 ? cudaErrorNotSupported : cudaSuccess;
  }();
  if (usable != cudaSuccess) return usable;
  const dim3 grid(unsigned((p.n + kBlockCols - 1) / kBlockCols), unsigned(p.splits));
  skinny_gemm_kernel<T, MT><<<grid, kThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_dtype(const SkinnyGemmParams& p, cudaStream_t stream) {
  return p.rows <= 16 ? launch_tiles<T, 1>(p, stream) : launch_tiles<T, 2>(p, stream);
}

}  // namespace

bool skinny_gemm_supported(const SkinnyGemmParams& p) {
  return (p.dtype == DType::kBF16 || p.dtype == DType::kF16) && p.rows >= 1 &&
         p.rows <= kSkinnyGemmMaxRows && p.n >= 1 && p.n <= (std::int64_t(1) << 36) &&
         p.k >= kChunk && p.k % kChunk == 0 && p.k / kChunk <= 0x7fffffff && p.x_stride % 8 == 0 &&
         p.w_stride % 8 == 0 && p.x_stride >= p.k && p.w_stride >= p.k && p.out_stride >= p.n &&
         device::aligned16(p.x) && device::aligned16(p.w) && p.out != nullptr &&
         (p.n + kBlockCols - 1) / kBlockCols <= 0x7fffffff && p.splits >= 1 && p.splits <= 65535 &&
         (p.splits == 1 || (p.workspace != nullptr && p.counters != nullptr));
}

std::int32_t skinny_gemm_splits(const SkinnyGemmParams& p, int sm_count) {
  const std::int64_t columns = (p.n + kBlockCols - 1) / kBlockCols;
  const std::int64_t want = (4 * std::int64_t(sm_count) + columns - 1) / columns;
  const std::int64_t most = std::max<std::int64_t>(1, p.k / (kChunk * 16));  // >= 512 of K each
  return std::int32_t(std::max<std::int64_t>(1, std::min({want, most, std::int64_t(64)})));
}

std::int64_t skinny_gemm_counters(const SkinnyGemmParams& p) {
  return (p.n + kBlockCols - 1) / kBlockCols;
}

cudaError_t skinny_gemm_launch(const SkinnyGemmParams& p, cudaStream_t stream) {
  if (!skinny_gemm_supported(p)) return cudaErrorInvalidValue;
  return p.dtype == DType::kBF16 ? launch_dtype<__nv_bfloat16>(p, stream)
                                 : launch_dtype<__half>(p, stream);
}

}  // namespace inferscale
