#pragma once
// @brief The product of a few rows by a weight matrix (a linear layer over a query-only prefill
// or a small decode batch): out = x w^T (+ residual), the residual added in the same pass. At a
// few dozen rows such a product only streams the weights once. Measured on the H200, none of its
// variants streams them as fast as cuBLAS on most products (more loads in flight per warp did
// not help; bench/results/skinny_gemm/README.md), so the executor leaves it off by default.

#include <cuda_runtime_api.h>

#include "kernels/params.h"

namespace inferscale {

/// The most rows the kernel takes.
inline constexpr std::int64_t kSkinnyGemmMaxRows = 32;

/// Shapes of the kernel (`SkinnyGemmParams::variant`): 8, 16 or 32 output columns per block and
/// 2 to 16 chunks of loads each warp keeps in flight (kernels/skinny_gemm.cu lists them). Every
/// variant computes the same sums in the same order per warp.
inline constexpr int kSkinnyGemmVariants = 8;

/// The variant a launch with `variant` -1 runs (the fastest of them on most products measured).
inline constexpr int kSkinnyGemmDefaultVariant = 0;

/// Whether skinny_gemm_launch() takes `p`: 16-bit dtype, 1 .. kSkinnyGemmMaxRows rows, k a
/// positive multiple of 32, x and w 16-byte aligned with strides multiple of 8 elements;
/// with splits > 1, a workspace and counters.
bool skinny_gemm_supported(const SkinnyGemmParams& p);

/// Blocks per block of output columns that keep every SM of a GPU with `sm_count` SMs streaming
/// weights: enough blocks for four per SM, each split at least 512 elements of K.
std::int32_t skinny_gemm_splits(const SkinnyGemmParams& p, int sm_count);

/// Counters a launch of `p` with splits > 1 needs: one per block of output columns.
std::int64_t skinny_gemm_counters(const SkinnyGemmParams& p);

/// Runs the product on `stream`. Parameters skinny_gemm_supported() rejects return
/// cudaErrorInvalidValue without a launch; a build whose device code for the kernel predates
/// sm_80 returns cudaErrorNotSupported. Reference: skinny_gemm_reference
/// (kernels/reference/skinny_gemm.h); the sums run in another order (per warp, then across
/// warps), so results agree within fp32 accumulation error and one rounding of the dtype.
cudaError_t skinny_gemm_launch(const SkinnyGemmParams& p, cudaStream_t stream);

}  // namespace inferscale
