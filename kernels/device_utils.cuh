#pragma once
// @brief Device helpers shared by the kernels: typed conversions, vector loads, and the one
// rotary routine (RowChunk::rotate) that rope.cu, kv_append.cu and inject.cu all call, so that
// a key rotated at injection is bit-identical to one rotated in a native prefill.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/kernel_types.h"
#include "kernels/params.h"

namespace inferscale::device {

__device__ __forceinline__ float to_f32(float x) {
  return x;
}
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
__device__ __forceinline__ float to_f32(__half x) {
  return __half2float(x);
}

template <typename T>
__device__ __forceinline__ T from_f32(float x);
template <>
__device__ __forceinline__ float from_f32<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ __forceinline__ __half from_f32<__half>(float x) {
  return __float2half_rn(x);
}

/// V contiguous elements, loaded and stored in one access (16 bytes when V * sizeof(T) == 16).
template <typename T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

/// Elements per 16-byte access.
template <typename T>
constexpr int kVec16 = 16 / int(sizeof(T));

__host__ __device__ inline bool aligned16(const void* p) {
  return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0;
}

/// Loads V fp32 values (float4 accesses when V is a multiple of 4).
template <int V>
__device__ __forceinline__ void load_f32(const float* p, float (&out)[V]) {
  if constexpr (V % 4 == 0) {
#pragma unroll
    for (int i = 0; i < V; i += 4) {
      const float4 x = *reinterpret_cast<const float4*>(p + i);
      out[i] = x.x;
      out[i + 1] = x.y;
      out[i + 2] = x.z;
      out[i + 3] = x.w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = p[i];
  }
}

/// 1 / sqrt(mean(x^2) + eps) over one row of `cols` elements, the squares summed in fp32 (warp
/// shuffles, then shared memory); every thread of the block gets the result. It synchronizes the
/// block: every thread must call it, and blockDim.x must be a multiple of 32. The row is read in
/// V-element vectors: V > 1 needs cols % V == 0 and a 16-byte aligned row. rms_norm.cu,
/// kv_append.cu and silu_mul.cu all call it (a folded norm scales exactly as the kernel it
/// replaced).
template <typename T, int V>
__device__ float block_inv_rms(const T* x, std::int64_t cols, float eps) {
  __shared__ float warp_sums[32];
  __shared__ float inv_rms;
  const int vecs = int(cols / V);
  float sum = 0.0f;
  for (int i = threadIdx.x; i < vecs; i += blockDim.x) {
    const Vec<T, V> v = reinterpret_cast<const Vec<T, V>*>(x)[i];
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const float f = to_f32(v.v[j]);
      sum += f * f;
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int i = 0; i < int(blockDim.x >> 5); ++i) total += warp_sums[i];
    inv_rms = 1.0f / sqrtf(total / float(cols) + eps);
  }
  __syncthreads();
  return inv_rms;
}

/// block_inv_rms of row `row` of a folded norm's input (RmsScaleView), in 16-byte vectors where
/// the row's alignment and length allow.
template <typename T>
__device__ float block_rms_scale(const RmsScaleView& norm, std::int64_t row) {
  constexpr int kV = kVec16<T>;
  const T* x = static_cast<const T*>(norm.x) + row * norm.stride;
  if (norm.cols % kV == 0 && aligned16(x)) return block_inv_rms<T, kV>(x, norm.cols, norm.eps);
  return block_inv_rms<T, 1>(x, norm.cols, norm.eps);
}

/// One rotary pair, every product and sum rounded (no fused multiply-add): the CPU reference
/// (kernels/reference/rope.cpp) computes the same operations in the same order.
template <bool Forward>
__device__ __forceinline__ void rope_pair(float a, float b, float c, float s, float& oa,
                                          float& ob) {
  if constexpr (Forward) {
    oa = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
    ob = __fadd_rn(__fmul_rn(b, c), __fmul_rn(a, s));
  } else {
    oa = __fadd_rn(__fmul_rn(a, c), __fmul_rn(b, s));
    ob = __fsub_rn(__fmul_rn(b, c), __fmul_rn(a, s));
  }
}

/// The part of one head vector that one thread handles: V rotary pairs held as two vectors.
/// Chunk c of a row of head_dim elements covers pairs c*V .. c*V + V - 1:
///   NeoX: lo = [c*V, c*V + V), hi = [d/2 + c*V, ...), pair j = (lo[j], hi[j]);
///   GPT-J: lo = [2cV, 2cV + V), hi = [2cV + V, 2cV + 2V), pair j = elements (2j, 2j + 1) of lo|hi.
/// A row has head_dim / (2V) chunks in both layouts.
template <typename T, int V>
struct RowChunk {
  Vec<T, V> lo, hi;

  __device__ static int lo_off(int c, int half, RopeStyle s) {
    return s == RopeStyle::kNeox ? c * V : 2 * c * V;
  }
  __device__ static int hi_off(int c, int half, RopeStyle s) {
    return s == RopeStyle::kNeox ? half + c * V : 2 * c * V + V;
  }
  __device__ void load(const T* row, int c, int half, RopeStyle s) {
    lo = *reinterpret_cast<const Vec<T, V>*>(row + lo_off(c, half, s));
    hi = *reinterpret_cast<const Vec<T, V>*>(row + hi_off(c, half, s));
  }
  __device__ void store(T* row, int c, int half, RopeStyle s) const {
    *reinterpret_cast<Vec<T, V>*>(row + lo_off(c, half, s)) = lo;
    *reinterpret_cast<Vec<T, V>*>(row + hi_off(c, half, s)) = hi;
  }

  /// Multiplies every element by s in fp32, rounding once back to T (a folded norm's scale).
  __device__ void scale(float s) {
#pragma unroll
    for (int j = 0; j < V; ++j) {
      lo.v[j] = from_f32<T>(__fmul_rn(to_f32(lo.v[j]), s));
      hi.v[j] = from_f32<T>(__fmul_rn(to_f32(hi.v[j]), s));
    }
  }

  /// Rotates the chunk's pairs by the table row of |position| (sin negated when position < 0).
  template <bool Forward>
  __device__ void rotate(const float* cos_row, const float* sin_row, int c, bool negative,
                         RopeStyle s) {
    float cs[V], sn[V];
    load_f32<V>(cos_row + c * V, cs);
    load_f32<V>(sin_row + c * V, sn);
    float a[V], b[V];
    if (s == RopeStyle::kNeox) {
#pragma unroll
      for (int j = 0; j < V; ++j) {
        a[j] = to_f32(lo.v[j]);
        b[j] = to_f32(hi.v[j]);
      }
    } else {
      float buf[2 * V];  // lo | hi
#pragma unroll
      for (int j = 0; j < V; ++j) {
        buf[j] = to_f32(lo.v[j]);
        buf[V + j] = to_f32(hi.v[j]);
      }
#pragma unroll
      for (int j = 0; j < V; ++j) {
        a[j] = buf[2 * j];
        b[j] = buf[2 * j + 1];
      }
    }
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const float sj = negative ? -sn[j] : sn[j];
      rope_pair<Forward>(a[j], b[j], cs[j], sj, a[j], b[j]);
    }
    if (s == RopeStyle::kNeox) {
#pragma unroll
      for (int j = 0; j < V; ++j) {
        lo.v[j] = from_f32<T>(a[j]);
        hi.v[j] = from_f32<T>(b[j]);
      }
    } else {
      float buf[2 * V];
#pragma unroll
      for (int j = 0; j < V; ++j) {
        buf[2 * j] = a[j];
        buf[2 * j + 1] = b[j];
      }
#pragma unroll
      for (int j = 0; j < V; ++j) {
        lo.v[j] = from_f32<T>(buf[j]);
        hi.v[j] = from_f32<T>(buf[V + j]);
      }
    }
  }
};

/// Calls Launch<T>::run(p, stream) for the element type T of `dtype`.
template <template <typename> class Launch, class Params>
cudaError_t dispatch_dtype(DType dtype, const Params& p, cudaStream_t stream) {
  switch (dtype) {
    case DType::kF32:
      return Launch<float>::run(p, stream);
    case DType::kBF16:
      return Launch<__nv_bfloat16>::run(p, stream);
    case DType::kF16:
      return Launch<__half>::run(p, stream);
  }
  return cudaErrorInvalidValue;
}

/// 1-D launch size for `total` threads of `block` threads each, capped for grid-stride loops.
inline unsigned grid_for(std::int64_t total, int block) {
  const std::int64_t g = (total + block - 1) / block;
  return unsigned(g < 1 ? 1 : (g > (1 << 20) ? (1 << 20) : g));
}

}  // namespace inferscale::device
