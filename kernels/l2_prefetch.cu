// L2 prefetch: a grid-stride loop of prefetch instructions, one per 128-byte line of the range;
// a prefetch returns nothing, so a thread issues its lines without waiting for any of them.
#include <algorithm>
#include <cstdint>

#include "kernels/l2_prefetch.cuh"
#include "kernels/reference/l2_prefetch.h"

namespace inferscale {
namespace {

__global__ void l2_prefetch_kernel(const char* first_line, std::size_t lines) {
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < lines;
       i += std::size_t(gridDim.x) * blockDim.x) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(first_line + i * kL2LineBytes));
  }
}

}  // namespace

cudaError_t l2_prefetch_launch(const void* p, std::size_t bytes, cudaStream_t stream) {
  const L2Lines r = l2_lines(p, bytes);
  if (r.count == 0) return cudaSuccess;
  // Few blocks: they run beside the compute stream's kernels without taking their places.
  constexpr unsigned kThreads = 256;
  const auto blocks = unsigned(std::min<std::size_t>((r.count + kThreads - 1) / kThreads, 32));
  l2_prefetch_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<const char*>(r.first), r.count);
  return cudaGetLastError();
}

}  // namespace inferscale
