#include "tests/kernels/kernels_test_util.h"

#include <cstring>

#include "kernels/cuda_check.h"
#include "kernels/reference/numeric.h"

namespace inferscale::test {

bool cuda_device_available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  INFERSCALE_CUDA_CHECK(cudaMalloc(&ptr_, bytes_ == 0 ? 16 : bytes_));
}

DeviceBuffer::DeviceBuffer(const std::vector<std::uint8_t>& host) : DeviceBuffer(host.size()) {
  if (!host.empty()) {
    INFERSCALE_CUDA_CHECK(cudaMemcpy(ptr_, host.data(), host.size(), cudaMemcpyHostToDevice));
  }
}

DeviceBuffer::~DeviceBuffer() {
  cudaFree(ptr_);
}

std::vector<std::uint8_t> DeviceBuffer::download() const {
  std::vector<std::uint8_t> host(bytes_);
  if (bytes_ > 0) {
    INFERSCALE_CUDA_CHECK(cudaMemcpy(host.data(), ptr_, bytes_, cudaMemcpyDeviceToHost));
  }
  return host;
}

std::vector<std::uint8_t> random_elems(std::size_t n, DType dtype, std::mt19937& rng, float scale) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<std::uint8_t> out(n * dtype_bytes(dtype));
  for (std::size_t i = 0; i < n; ++i) store_elem(out.data(), std::int64_t(i), dtype, normal(rng));
  return out;
}

std::vector<std::uint8_t> poison_elems(std::size_t n, DType dtype) {
  std::vector<std::uint8_t> out(n * dtype_bytes(dtype));
  for (std::size_t i = 0; i < n; ++i) {
    store_elem(out.data(), std::int64_t(i), dtype, -12345.0f + float(i % 97));
  }
  return out;
}

namespace {

// Maps a float's bits to an integer line on which adjacent floats differ by one.
std::int64_t ordered(std::uint32_t bits, int width) {
  const std::uint32_t sign = 1u << (width - 1);
  const std::int64_t mag = bits & (sign - 1u);
  return (bits & sign) ? -mag : mag;
}

}  // namespace

std::uint64_t max_ulp_diff(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b,
                           DType dtype) {
  const std::size_t w = dtype_bytes(dtype), n = a.size() / w;
  std::uint64_t worst = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t x = 0, y = 0;
    std::memcpy(&x, a.data() + i * w, w);
    std::memcpy(&y, b.data() + i * w, w);
    const std::int64_t d = ordered(x, int(8 * w)) - ordered(y, int(8 * w));
    const std::uint64_t ad = std::uint64_t(d < 0 ? -d : d);
    if (ad > worst) worst = ad;
  }
  return worst;
}

void device_sync() {
  INFERSCALE_CUDA_CHECK(cudaGetLastError());
  INFERSCALE_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace inferscale::test
