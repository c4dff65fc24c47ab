#pragma once
// @brief Warp-level tensor-core primitives for the kernels that multiply 16-bit matrices
// (split-KV attention): mma.sync m16n8k16 with fp32 accumulators.
//
// bf16 mma.sync needs sm_80: device code for older targets (a build's default architecture
// list) compiles to empty bodies, and each launcher refuses to run such a kernel (it reads the
// kernel's PTX version) rather than return garbage.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define INFERSCALE_MMA_BODY 0
#else
#define INFERSCALE_MMA_BODY 1
#endif

namespace inferscale::device {

template <typename T>
struct Mma;

template <>
struct Mma<__nv_bfloat16> {
  __device__ static std::uint32_t pack(float lo, float hi) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x (low half) = lo
    return *reinterpret_cast<const std::uint32_t*>(&v);
  }
  /// c += a b: a 16x16 row-major (4 regs), b 16x8 column-major (2 regs), c 16x8 fp32.
  /// Lane l (group g = l / 4, thread t = l % 4) holds a[0] = A[g][2t, 2t+1], a[1] = A[g+8][2t..],
  /// a[2] = A[g][2t+8, 2t+9], a[3] = A[g+8][2t+8..], b0 = B[2t, 2t+1][g], b1 = B[2t+8, 2t+9][g],
  /// c = C[g][2t, 2t+1], C[g+8][2t, 2t+1].
  __device__ static void mma(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                             std::uint32_t b1) {
#if INFERSCALE_MMA_BODY
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
  }
};

template <>
struct Mma<__half> {
  __device__ static std::uint32_t pack(float lo, float hi) {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&v);
  }
  __device__ static void mma(float (&c)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                             std::uint32_t b1) {
#if INFERSCALE_MMA_BODY
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
  }
};

}  // namespace inferscale::device
