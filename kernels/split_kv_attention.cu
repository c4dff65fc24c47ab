// Split-KV attention (flash-decoding style, GQA-packed) and the combine of its partials.
//
// Main kernel. Grid: x = row tile, y = key split, z = segment * kv_heads + kv head. The query
// rows of one (segment, kv head) are packed token-major: row r = token * group + head within the
// group (group = heads / kv_heads), so every K/V tile is read once for the whole group. A block
// has four warps: warp w takes the 16 rows 16 * (w % WM) .. of its tile of 16 * WM rows and the
// slice w / WM (of 64 / (4 / WM) keys) of every 64-key tile of its split. Q is loaded once, K and
// V tiles are double-buffered in shared memory with cp.async (16-byte pieces, zero-filled past
// the split's last needed key), the products Q K^T and P V run on mma.sync m16n8k16 (16-bit
// inputs, fp32 accumulators) and the online softmax keeps fp32 maxima and sums per row (log2
// domain). Each warp writes its slice's partial (unnormalized output, maximum, sum) to the
// workspace, or, when the plan has a single partial, the normalized output itself.
//
// Combine kernel: one warp per (token, head) output row; it weighs the partials of the splits
// that cover its segment's keys by exp2(m_j - max) and normalizes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/device_utils.cuh"
#include "kernels/launch.cuh"
#include "kernels/mma.cuh"
#include "kernels/split_kv_attention.cuh"
#include "kernels/split_kv_plan.h"

// cp.async needs sm_80 as mma.sync does (kernels/mma.cuh): older targets get empty bodies.
#define INFERSCALE_SPLIT_KV_BODY INFERSCALE_MMA_BODY

namespace inferscale {
namespace {

constexpr int kThreads = kSplitKvWarps * 32;
constexpr int kTileKeys = kSplitKvTileKeys;
// Padding of each shared-memory row (elements): consecutive rows start 16 bytes apart in the
// banks, so the eight rows that one ldmatrix phase reads hit distinct banks.
constexpr int kPad = 8;
constexpr float kLog2e = 1.4426950408889634f;
constexpr unsigned kFull = 0xffffffffu;

/// Dynamic shared memory of the main kernel: the Q tile, then two stages of K and of V tiles.
template <typename T, int D, int WM>
constexpr int main_smem_bytes() {
  return (16 * WM + 4 * kTileKeys) * (D + kPad) * int(sizeof(T));
}

using device::Mma;

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

/// Four 8x8 16-bit matrices; lanes 8i .. 8i + 7 give the row addresses of matrix i, register i
/// receives matrix i (lane l: row l / 4, columns 2 (l % 4), 2 (l % 4) + 1).
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}

/// As ldmatrix_x4, transposed: lane l receives rows 2 (l % 4), 2 (l % 4) + 1 of column l / 4.
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}

/// 16 bytes global -> shared, asynchronously; zeros instead when !valid (nothing is read).
__device__ __forceinline__ void cp_async16(std::uint32_t dst, const void* src, bool valid) {
#if INFERSCALE_SPLIT_KV_BODY
  const int bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes)
               : "memory");
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#if INFERSCALE_SPLIT_KV_BODY
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

/// Waits until at most N committed groups of this thread are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if INFERSCALE_SPLIT_KV_BODY
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

template <typename T, int D, int WM>
__global__ void __launch_bounds__(kThreads)
    split_kv_attention_kernel(const SplitKvAttentionParams p) {
  constexpr int WK = kSplitKvWarps / WM;  // warps that share rows, one key slice each
  constexpr int KW = kTileKeys / WK;      // keys of a slice: 16, 32 or 64
  constexpr int NB = KW / 8;              // n8 blocks of a slice's scores
  constexpr int DK = D / 16;              // k16 steps of Q K^T
  constexpr int DN = D / 8;               // n8 blocks of the output
  constexpr int LD = D + kPad;            // shared-memory row (elements)
  constexpr int TILE_ROWS = 16 * WM;
  constexpr int PIECES = D / 8;  // 16-byte pieces per row

  extern __shared__ __align__(16) unsigned char smem[];
  T* qs = reinterpret_cast<T*>(smem);  // [TILE_ROWS][LD]
  T* ks = qs + TILE_ROWS * LD;         // [2][kTileKeys][LD]
  T* vs = ks + 2 * kTileKeys * LD;     // [2][kTileKeys][LD]

  device::wait_for_prior_grids();  // q, the cache rows kv_append wrote, the index arrays
  device::allow_dependent_grids();
  const int seg = int(blockIdx.z) / p.kv_heads, g = int(blockIdx.z) % p.kv_heads;
  const int group = p.heads / p.kv_heads;
  const int q0 = p.cu_q[seg];
  const int n = p.cu_q[seg + 1] - q0;
  const int rows = n * group;
  const int row0 = int(blockIdx.x) * TILE_ROWS;
  if (row0 >= rows) return;  // rows of a longer segment
  const int k_used = p.k_used[seg];
  const int c0 = int(blockIdx.y) * p.plan.chunk;
  if (c0 >= k_used) return;  // keys of a longer context: the combine does not read this split
  const std::int64_t k_first = p.k_start[seg];
  const int past = k_used - n;  // keys before the segment's first query
  const int last_row = min(row0 + TILE_ROWS, rows) - 1;
  // Keys [c0, c1) are all this block needs: its split, up to its last row's causal limit.
  const int c1 = min(c0 + p.plan.chunk, past + last_row / group + 1);
  const int tiles = c1 > c0 ? (c1 - c0 + kTileKeys - 1) / kTileKeys : 0;

  const int tid = int(threadIdx.x), warp = tid >> 5, lane = tid & 31;
  const int wm = warp % WM, kg = warp / WM;
  const int gid = lane >> 2, tig = lane & 3;  // mma fragment row group and column pair
  const int wrow0 = row0 + wm * 16;
  const bool warp_active = wrow0 < rows;
  const int r_lo = wrow0 + gid, r_hi = r_lo + 8;              // this lane's two rows
  const int lim_lo = r_lo < rows ? past + r_lo / group : -1;  // last key each row may see
  const int lim_hi = r_hi < rows ? past + r_hi / group : -1;
  const int warp_lim = warp_active ? past + min(wrow0 + 15, rows - 1) / group : -1;
  const float scale_log2 = p.scale * kLog2e;

  const T* kg_base = static_cast<const T*>(p.k) + std::int64_t(g) * p.kv_head_stride;
  const T* vg_base = static_cast<const T*>(p.v) + std::int64_t(g) * p.kv_head_stride;

  float o[DN][4];
#pragma unroll
  for (int dn = 0; dn < DN; ++dn) {
#pragma unroll
    for (int e = 0; e < 4; ++e) o[dn][e] = 0.0f;
  }
  float m_lo = -INFINITY, m_hi = -INFINITY, l_lo = 0.0f, l_hi = 0.0f;

  if (tiles > 0) {
    // Q tile (rows past the segment zero-filled) and K/V tile 0: one group.
    const T* q_base = static_cast<const T*>(p.q);
    for (int c = tid; c < TILE_ROWS * PIECES; c += kThreads) {
      const int r = c / PIECES, col = (c % PIECES) * 8;
      const int pr = row0 + r;
      const bool valid = pr < rows;
      const std::int64_t off = valid ? std::int64_t(q0 + pr / group) * p.q_token_stride +
                                           std::int64_t(g * group + pr % group) * p.q_head_stride +
                                           col
                                     : 0;
      cp_async16(smem_addr(qs + r * LD + col), q_base + off, valid);
    }
    auto load_kv = [&](int tile, int stage) {
      const int key0 = c0 + tile * kTileKeys;
      T* kd = ks + stage * kTileKeys * LD;
      T* vd = vs + stage * kTileKeys * LD;
      for (int c = tid; c < kTileKeys * PIECES; c += kThreads) {
        const int r = c / PIECES, col = (c % PIECES) * 8;
        const int key = key0 + r;
        const bool valid = key < c1;
        const std::int64_t off = valid ? (k_first + key) * p.kv_row_stride + col : 0;
        cp_async16(smem_addr(kd + r * LD + col), kg_base + off, valid);
        cp_async16(smem_addr(vd + r * LD + col), vg_base + off, valid);
      }
    };
    load_kv(0, 0);
    cp_async_commit();

    std::uint32_t qf[DK][4];  // this warp's 16 query rows as mma A fragments
    for (int i = 0; i < tiles; ++i) {
      if (i + 1 < tiles) {
        load_kv(i + 1, (i + 1) & 1);  // its stage was last read before the previous barrier
        cp_async_commit();
        cp_async_wait<1>();
      } else {
        cp_async_wait<0>();
      }
      __syncthreads();                                // tile i (and Q) visible to every warp
      const int key0 = c0 + i * kTileKeys + kg * KW;  // first key of this warp's slice
      if (warp_active) {
        if (i == 0) {
#pragma unroll
          for (int kk = 0; kk < DK; ++kk) {
            ldmatrix_x4(qf[kk],
                        smem_addr(qs + (wm * 16 + (lane & 15)) * LD + kk * 16 + (lane >> 4) * 8));
          }
        }
      }
      if (warp_active && key0 <= warp_lim) {  // warp-uniform: a slice past every row is skipped
        const T* kt = ks + ((i & 1) * kTileKeys + kg * KW) * LD;  // [KW][LD]
        const T* vt = vs + ((i & 1) * kTileKeys + kg * KW) * LD;  // [KW][LD]

        // S = Q K^T: [16 rows, KW keys] fp32.
        float s[NB][4];
#pragma unroll
        for (int nb = 0; nb < NB; ++nb) {
#pragma unroll
          for (int e = 0; e < 4; ++e) s[nb][e] = 0.0f;
        }
#pragma unroll
        for (int kk = 0; kk < DK; ++kk) {
#pragma unroll
          for (int nb = 0; nb < NB; nb += 2) {
            // Matrices: keys nb*8.. x dims kk*16 + {0, 8}, keys nb*8 + 8.. x the same.
            std::uint32_t b[4];
            ldmatrix_x4(b, smem_addr(kt + (nb * 8 + (lane >> 4) * 8 + (lane & 7)) * LD + kk * 16 +
                                     ((lane >> 3) & 1) * 8));
            Mma<T>::mma(s[nb], qf[kk], b[0], b[1]);
            Mma<T>::mma(s[nb + 1], qf[kk], b[2], b[3]);
          }
        }

        // Causal mask, scale to the log2 domain, online softmax (rows gid and gid + 8; the
        // four lanes of a quad hold one row's columns).
        float mx_lo = -INFINITY, mx_hi = -INFINITY;
#pragma unroll
        for (int nb = 0; nb < NB; ++nb) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int key = key0 + nb * 8 + tig * 2 + (e & 1);
            const bool ok = key <= (e < 2 ? lim_lo : lim_hi);
            s[nb][e] = ok ? s[nb][e] * scale_log2 : -INFINITY;
          }
          mx_lo = fmaxf(mx_lo, fmaxf(s[nb][0], s[nb][1]));
          mx_hi = fmaxf(mx_hi, fmaxf(s[nb][2], s[nb][3]));
        }
        mx_lo = fmaxf(mx_lo, __shfl_xor_sync(kFull, mx_lo, 1));
        mx_lo = fmaxf(mx_lo, __shfl_xor_sync(kFull, mx_lo, 2));
        mx_hi = fmaxf(mx_hi, __shfl_xor_sync(kFull, mx_hi, 1));
        mx_hi = fmaxf(mx_hi, __shfl_xor_sync(kFull, mx_hi, 2));
        const float new_lo = fmaxf(m_lo, mx_lo), new_hi = fmaxf(m_hi, mx_hi);
        // A row with no key yet subtracts 0: exp2(-inf - 0) = 0, never -inf - -inf.
        const float sub_lo = new_lo == -INFINITY ? 0.0f : new_lo;
        const float sub_hi = new_hi == -INFINITY ? 0.0f : new_hi;
        const float alpha_lo = exp2f(m_lo - sub_lo), alpha_hi = exp2f(m_hi - sub_hi);
        m_lo = new_lo;
        m_hi = new_hi;
        float sum_lo = 0.0f, sum_hi = 0.0f;
#pragma unroll
        for (int nb = 0; nb < NB; ++nb) {
          s[nb][0] = exp2f(s[nb][0] - sub_lo);
          s[nb][1] = exp2f(s[nb][1] - sub_lo);
          s[nb][2] = exp2f(s[nb][2] - sub_hi);
          s[nb][3] = exp2f(s[nb][3] - sub_hi);
          sum_lo += s[nb][0] + s[nb][1];
          sum_hi += s[nb][2] + s[nb][3];
        }
        l_lo = l_lo * alpha_lo + sum_lo;
        l_hi = l_hi * alpha_hi + sum_hi;
#pragma unroll
        for (int dn = 0; dn < DN; ++dn) {
          o[dn][0] *= alpha_lo;
          o[dn][1] *= alpha_lo;
          o[dn][2] *= alpha_hi;
          o[dn][3] *= alpha_hi;
        }

        // O += P V: the score accumulators of two adjacent n8 blocks are the A fragment of
        // one k16 step; V comes transposed from its [key][dim] rows.
#pragma unroll
        for (int kk = 0; kk < KW / 16; ++kk) {
          std::uint32_t a[4];
          a[0] = Mma<T>::pack(s[2 * kk][0], s[2 * kk][1]);
          a[1] = Mma<T>::pack(s[2 * kk][2], s[2 * kk][3]);
          a[2] = Mma<T>::pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
          a[3] = Mma<T>::pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
          for (int dn = 0; dn < DN; dn += 2) {
            // Matrices: keys kk*16 + {0, 8}.. x dims dn*8.., then the same keys x dims dn*8 + 8..
            std::uint32_t b[4];
            ldmatrix_x4_trans(
                b, smem_addr(vt + (kk * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * LD + dn * 8 +
                             (lane >> 4) * 8));
            Mma<T>::mma(o[dn], a, b[0], b[1]);
            Mma<T>::mma(o[dn + 1], a, b[2], b[3]);
          }
        }
      }
      __syncthreads();  // every warp is done with stage i & 1 before it is refilled
    }
  }
  if (!warp_active) return;

  // Row sums: each lane of a quad summed its own columns.
  l_lo += __shfl_xor_sync(kFull, l_lo, 1);
  l_lo += __shfl_xor_sync(kFull, l_lo, 2);
  l_hi += __shfl_xor_sync(kFull, l_hi, 1);
  l_hi += __shfl_xor_sync(kFull, l_hi, 2);

  const std::int64_t th = std::int64_t(p.tokens) * p.heads;
  const int part = int(blockIdx.y) * WK + kg;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int r = half == 0 ? r_lo : r_hi;
    if (r >= rows) continue;
    const int token = q0 + r / group, head = g * group + r % group;
    const float m = half == 0 ? m_lo : m_hi, l = half == 0 ? l_lo : l_hi;
    if (p.plan.direct()) {
      const float inv = l > 0.0f ? 1.0f / l : 0.0f;
      T* dst = static_cast<T*>(p.out) + std::int64_t(token) * p.out_token_stride +
               std::int64_t(head) * p.out_head_stride + tig * 2;
#pragma unroll
      for (int dn = 0; dn < DN; ++dn) {
        *reinterpret_cast<std::uint32_t*>(dst + dn * 8) =
            Mma<T>::pack(o[dn][2 * half] * inv, o[dn][2 * half + 1] * inv);
      }
    } else {
      const std::int64_t parts = p.plan.partials();
      float* ws_o = p.workspace;            // [parts][tokens * heads][D]
      float* ws_m = ws_o + parts * th * D;  // [parts][tokens * heads]
      float* ws_l = ws_m + parts * th;      // [parts][tokens * heads]
      const std::int64_t wrow = part * th + std::int64_t(token) * p.heads + head;
      float* dst = ws_o + wrow * D + tig * 2;
#pragma unroll
      for (int dn = 0; dn < DN; ++dn) {
        *reinterpret_cast<float2*>(dst + dn * 8) =
            make_float2(o[dn][2 * half], o[dn][2 * half + 1]);
      }
      if (tig == 0) {
        ws_m[wrow] = m;
        ws_l[wrow] = l;
      }
    }
  }
}

template <typename T, int D>
__global__ void __launch_bounds__(kThreads)
    split_kv_combine_kernel(const SplitKvAttentionParams p) {
  constexpr int E = D / 32;         // values per lane: 2 or 4
  device::wait_for_prior_grids();   // the partials
  device::allow_dependent_grids();  // the O product may start loading its weights
  const std::int64_t th = std::int64_t(p.tokens) * p.heads;
  const std::int64_t row = std::int64_t(blockIdx.x) * kSplitKvWarps + (threadIdx.x >> 5);
  const int lane = int(threadIdx.x) & 31;
  if (row >= th) return;
  const int token = int(row / p.heads), head = int(row % p.heads);
  int lo = 0, hi = p.segments - 1;  // the segment: the last s with cu_q[s] <= token
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (p.cu_q[mid] <= token) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  const int wk = kSplitKvWarps / p.plan.warps_m;
  const int parts = (p.k_used[lo] + p.plan.chunk - 1) / p.plan.chunk * wk;
  const std::int64_t all_parts = p.plan.partials();
  const float* ws_o = p.workspace;
  const float* ws_m = ws_o + all_parts * th * D;
  const float* ws_l = ws_m + all_parts * th;

  float mx = -INFINITY;
  for (int j = lane; j < parts; j += 32) mx = fmaxf(mx, ws_m[j * th + row]);
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, off));
  float acc[E];
#pragma unroll
  for (int e = 0; e < E; ++e) acc[e] = 0.0f;
  float l = 0.0f;
  // Partials in order of j, their loads issued kBatch at a time: one partial per iteration left
  // each warp waiting out a load latency per partial (decode steps have dozens of partials and
  // few rows, so few warps to hide it). The sums run in the same order either way.
  constexpr int kBatch = 8;
  using Part = std::conditional_t<E == 4, float4, float2>;
  auto add = [&](float mj, float lj, const Part& x) {
    const float w = mj == -INFINITY ? 0.0f : exp2f(mj - mx);  // a slice with no key: weight 0
    l += w * lj;
    acc[0] += w * x.x;
    acc[1] += w * x.y;
    if constexpr (E == 4) {
      acc[2] += w * x.z;
      acc[3] += w * x.w;
    }
  };
  auto part = [&](int j) {
    return *reinterpret_cast<const Part*>(ws_o + (j * th + row) * D + lane * E);
  };
  int j = 0;
  for (; j + kBatch <= parts; j += kBatch) {
    float mj[kBatch], lj[kBatch];
    Part x[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      mj[b] = ws_m[(j + b) * th + row];
      lj[b] = ws_l[(j + b) * th + row];
      x[b] = part(j + b);
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) add(mj[b], lj[b], x[b]);
  }
  for (; j < parts; ++j) add(ws_m[j * th + row], ws_l[j * th + row], part(j));
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
  T* dst = static_cast<T*>(p.out) + std::int64_t(token) * p.out_token_stride +
           std::int64_t(head) * p.out_head_stride + lane * E;
#pragma unroll
  for (int e = 0; e < E; e += 2) {
    *reinterpret_cast<std::uint32_t*>(dst + e) = Mma<T>::pack(acc[e] * inv, acc[e + 1] * inv);
  }
}

/// Once per kernel and process: device code for sm_80 or later (not an empty body JIT-compiled
/// from an older PTX), and the dynamic shared-memory limit raised past the default 48 KiB.
template <typename T, int D, int WM>
cudaError_t prepare_main() {
  cudaFuncAttributes attrs{};
  cudaError_t err = cudaFuncGetAttributes(&attrs, split_kv_attention_kernel<T, D, WM>);
  if (err != cudaSuccess) return err;
  if (attrs.ptxVersion < 80) return cudaErrorNotSupported;
  return cudaFuncSetAttribute(split_kv_attention_kernel<T, D, WM>,
                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                              main_smem_bytes<T, D, WM>());
}

template <typename T, int D, int WM>
cudaError_t launch_main(const SplitKvAttentionParams& p, cudaStream_t stream) {
  constexpr int smem = main_smem_bytes<T, D, WM>();
  static const cudaError_t prepared = prepare_main<T, D, WM>();
  if (prepared != cudaSuccess) return prepared;
  const dim3 grid(unsigned(p.plan.row_tiles), unsigned(p.plan.splits),
                  unsigned(p.segments * p.kv_heads));
  return device::launch_kernel(split_kv_attention_kernel<T, D, WM>, grid, dim3(kThreads),
                               std::size_t(smem), stream, p);
}

template <typename T, int D>
cudaError_t launch_all(const SplitKvAttentionParams& p, cudaStream_t stream) {
  cudaError_t err = cudaErrorInvalidValue;
  switch (p.plan.warps_m) {
    case 1:
      err = launch_main<T, D, 1>(p, stream);
      break;
    case 2:
      err = launch_main<T, D, 2>(p, stream);
      break;
    case 4:
      err = launch_main<T, D, 4>(p, stream);
      break;
  }
  if (err != cudaSuccess || p.plan.direct()) return err;
  const std::int64_t rows = std::int64_t(p.tokens) * p.heads;
  const unsigned blocks = unsigned((rows + kSplitKvWarps - 1) / kSplitKvWarps);
  return device::launch_kernel(split_kv_combine_kernel<T, D>, dim3(blocks), dim3(kThreads), 0,
                               stream, p);
}

template <typename T>
cudaError_t launch_dtype(const SplitKvAttentionParams& p, cudaStream_t stream) {
  return p.head_dim == 64 ? launch_all<T, 64>(p, stream) : launch_all<T, 128>(p, stream);
}

}  // namespace

cudaError_t split_kv_attention_launch(const SplitKvAttentionParams& p, cudaStream_t stream) {
  if (!split_kv_attention_check(p).empty()) return cudaErrorInvalidValue;
  if (p.segments == 0 || p.tokens == 0) return cudaSuccess;
  return p.dtype == DType::kBF16 ? launch_dtype<__nv_bfloat16>(p, stream)
                                 : launch_dtype<__half>(p, stream);
}

}  // namespace inferscale
