// Staged copy: a grid-stride loop over 4-byte words.
#include <algorithm>
#include <cstdint>

#include "kernels/staged_copy.cuh"

namespace inferscale {
namespace {

__global__ void staged_copy_kernel(std::uint32_t* dst, const std::uint32_t* src, std::size_t words) {
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < words;
       i += std::size_t(gridDim.x) * blockDim.x) {
    dst[i] = src[i];
  }
}

}  // namespace

cudaError_t staged_copy_launch(void* dst, const void* src, std::size_t words, cudaStream_t stream) {
  if (words == 0) return cudaSuccess;
  constexpr unsigned kThreads = 256;
  const auto blocks = unsigned(std::min<std::size_t>((words + kThreads - 1) / kThreads, 64));
  staged_copy_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<std::uint32_t*>(dst),
                                                       static_cast<const std::uint32_t*>(src), words);
  return cudaGetLastError();
}

}  // namespace inferscale
