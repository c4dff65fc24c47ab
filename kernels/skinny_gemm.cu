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
// Launched by device::launch_kernel (kernels/launch.cuh): under programmatic dependent launch a
// block issues its first weight loads before it waits for the kernels before it.
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
#include <utility>

#include "kernels/device_utils.cuh"
#include "kernels/launch.cuh"
#include "kernels/mma.cuh"
#include "kernels/skinny_gemm.cuh"

namespace inferscale {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kChunk = 32;  // k elements per warp step (two mma k-steps)

/// The kernel's shapes: n-tiles of 8 weight rows per block, chunks each warp keeps loading ahead
/// of its products, and the blocks per SM its registers are budgeted for.
struct Variant {
  int n_tiles, depth, min_blocks;
};
constexpr Variant kVariants[] = {{4, 2, 2}, {4, 4, 2}, {2, 4, 2}, {2, 8, 2},
                                 {4, 8, 1}, {1, 8, 2}, {2, 6, 2}, {1, 16, 2}};
static_assert(sizeof(kVariants) / sizeof(kVariants[0]) == kSkinnyGemmVariants);

using device::Mma;

template <typename T, int MT, int NT, int DEPTH, int MINB>
__global__ void __launch_bounds__(kThreads, MINB) skinny_gemm_kernel(SkinnyGemmParams p) {
#if INFERSCALE_MMA_BODY
  constexpr int kBlockCols = NT * 8;
  constexpr int kRedStride = kBlockCols + 4;  // shared-memory row of partial sums (floats)
  __shared__ float red[kWarps][MT * 16][kRedStride];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const std::int64_t n0 = std::int64_t(blockIdx.x) * kBlockCols;
  const T* w = static_cast<const T*>(p.w);
  const T* x = static_cast<const T*>(p.x);

  // This lane's 16-byte column of its operand rows at chunk 0: weight row n0 + g (the n-tiles
  // nt * 8 rows further), x rows g and g + 8 of each m-tile (16 and 8 rows further). Rows past
  // the end are not read and count as zero.
  const uint4* wbase = reinterpret_cast<const uint4*>(w + t * 8);
  const uint4* xbase = reinterpret_cast<const uint4*>(x + t * 8);
  const std::int64_t wstep = p.w_stride / 8, xstep = p.x_stride / 8;  // uint4s per row
  std::uint32_t wlive = 0, xlive = 0;                                 // bit nt / bit 2 mt + h
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    if (n0 + nt * 8 + g < p.n) wlive |= 1u << nt;
  }
  const std::int64_t wrow0 = (n0 + g) * wstep;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (mt * 16 + h * 8 + g < p.rows) xlive |= 1u << (2 * mt + h);
    }
  }

  float acc[MT][NT][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][nt][e] = 0.0f;
    }
  }

  // This warp's chunks of the block's K range: first, first + 8, first + 16, ... (`mine` of
  // them). A ring of DEPTH register slots holds the weights of the next DEPTH chunks: each step
  // multiplies the oldest slot and refills it with the chunk DEPTH ahead, so DEPTH chunks of
  // weight loads stay in flight while the warp multiplies. x (read by every block, so mostly
  // from cache) is loaded at its step.
  const int chunks = int(p.k / kChunk);
  const int per_split = (chunks + p.splits - 1) / p.splits;
  const int c_begin = int(blockIdx.y) * per_split;
  const int c_end = min(chunks, c_begin + per_split);
  const int first = c_begin + warp;
  const int mine = first < c_end ? (c_end - first + kWarps - 1) / kWarps : 0;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  auto chunk_off = [&](int i) { return std::int64_t(first + i * kWarps) * (kChunk / 8); };
  uint4 b[DEPTH][NT];
  auto load_w = [&](int i, uint4(&bs)[NT]) {
    const bool live = i < mine;
    const std::int64_t off = wrow0 + chunk_off(i);
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      bs[nt] = live && (wlive >> nt & 1u) ? __ldcs(wbase + off + nt * 8 * wstep) : zero;
    }
  };
#pragma unroll
  for (int u = 0; u < DEPTH; ++u) load_w(u, b[u]);
  // The weights do not depend on earlier kernels: under programmatic dependent launch their
  // first loads are in flight before this waits for x (and the residual) to be written.
  device::wait_for_prior_grids();
  device::allow_dependent_grids();
  for (int base = 0; base < mine; base += DEPTH) {
#pragma unroll
    for (int u = 0; u < DEPTH; ++u) {
      if (base + u < mine) {
        const std::int64_t off = chunk_off(base + u);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          uint4 a[2];
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            a[h] = (xlive >> (2 * mt + h) & 1u) ? __ldg(xbase + (mt * 16 + h * 8 + g) * xstep + off)
                                                : zero;
          }
          const std::uint32_t lo[4] = {a[0].x, a[1].x, a[0].y, a[1].y};
          const std::uint32_t hi[4] = {a[0].z, a[1].z, a[0].w, a[1].w};
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) {
            Mma<T>::mma(acc[mt][nt], lo, b[u][nt].x, b[u][nt].y);
            Mma<T>::mma(acc[mt][nt], hi, b[u][nt].z, b[u][nt].w);
          }
        }
      }
      load_w(base + u + DEPTH, b[u]);
    }
  }

#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
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

template <typename T, int MT, int NT, int DEPTH, int MINB>
cudaError_t launch_tiles(const SkinnyGemmParams& p, cudaStream_t stream) {
  // Device code compiled for a target before sm_80 is empty: refuse it (checked once).
  static const cudaError_t usable = [] {
    cudaFuncAttributes attrs{};
    const cudaError_t e = cudaFuncGetAttributes(&attrs, skinny_gemm_kernel<T, MT, NT, DEPTH, MINB>);
    if (e != cudaSuccess) return e;
    return attrs.ptxVersion < 80 ? cudaErrorNotSupported : cudaSuccess;
  }();
  if (usable != cudaSuccess) return usable;
  const dim3 grid(unsigned((p.n + NT * 8 - 1) / (NT * 8)), unsigned(p.splits));
  return device::launch_kernel(skinny_gemm_kernel<T, MT, NT, DEPTH, MINB>, grid, dim3(kThreads), 0,
                               stream, p);
}

template <typename T, int V>
cudaError_t launch_variant(const SkinnyGemmParams& p, cudaStream_t stream) {
  constexpr Variant v = kVariants[V];
  return p.rows <= 16 ? launch_tiles<T, 1, v.n_tiles, v.depth, v.min_blocks>(p, stream)
                      : launch_tiles<T, 2, v.n_tiles, v.depth, v.min_blocks>(p, stream);
}

template <typename T, int... V>
cudaError_t launch_dtype(const SkinnyGemmParams& p, int variant, cudaStream_t stream,
                         std::integer_sequence<int, V...>) {
  cudaError_t err = cudaErrorInvalidValue;
  ((variant == V ? (err = launch_variant<T, V>(p, stream), true) : false) || ...);
  return err;
}

/// The variant a launch of `p` runs.
int resolved(const SkinnyGemmParams& p) {
  return p.variant >= 0 ? p.variant : kSkinnyGemmDefaultVariant;
}

std::int64_t block_cols(const SkinnyGemmParams& p) {
  return std::int64_t(kVariants[resolved(p)].n_tiles) * 8;
}

}  // namespace

bool skinny_gemm_supported(const SkinnyGemmParams& p) {
  if (p.variant < -1 || p.variant >= kSkinnyGemmVariants) return false;
  return (p.dtype == DType::kBF16 || p.dtype == DType::kF16) && p.rows >= 1 &&
         p.rows <= kSkinnyGemmMaxRows && p.n >= 1 && p.n <= (std::int64_t(1) << 36) &&
         p.k >= kChunk && p.k % kChunk == 0 && p.k / kChunk <= 0x7fffffff && p.x_stride % 8 == 0 &&
         p.w_stride % 8 == 0 && p.x_stride >= p.k && p.w_stride >= p.k && p.out_stride >= p.n &&
         device::aligned16(p.x) && device::aligned16(p.w) && p.out != nullptr &&
         (p.n + block_cols(p) - 1) / block_cols(p) <= 0x7fffffff && p.splits >= 1 &&
         p.splits <= 65535 && (p.splits == 1 || (p.workspace != nullptr && p.counters != nullptr));
}

std::int32_t skinny_gemm_splits(const SkinnyGemmParams& p, int sm_count) {
  const std::int64_t columns = skinny_gemm_counters(p);
  const std::int64_t want = (4 * std::int64_t(sm_count) + columns - 1) / columns;
  const std::int64_t most = std::max<std::int64_t>(1, p.k / (kChunk * 16));  // >= 512 of K each
  return std::int32_t(std::max<std::int64_t>(1, std::min({want, most, std::int64_t(64)})));
}

std::int64_t skinny_gemm_counters(const SkinnyGemmParams& p) {
  return (p.n + block_cols(p) - 1) / block_cols(p);
}

cudaError_t skinny_gemm_launch(const SkinnyGemmParams& p, cudaStream_t stream) {
  if (!skinny_gemm_supported(p)) return cudaErrorInvalidValue;
  const auto all = std::make_integer_sequence<int, kSkinnyGemmVariants>();
  return p.dtype == DType::kBF16 ? launch_dtype<__nv_bfloat16>(p, resolved(p), stream, all)
                                 : launch_dtype<__half>(p, resolved(p), stream, all);
}

}  // namespace inferscale
