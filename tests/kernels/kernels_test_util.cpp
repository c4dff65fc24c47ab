#include "tests/kernels/kernels_test_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "kernels/cuda_check.h"
#include "kernels/reference/numeric.h"
#include "kernels/reference/rope.h"

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

double max_abs_diff(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b,
                    DType dtype) {
  const std::int64_t n = std::int64_t(a.size()) / dtype_bytes(dtype);
  double worst = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    worst = std::max(worst, std::abs(double(load_elem(a.data(), i, dtype)) -
                                     double(load_elem(b.data(), i, dtype))));
  }
  return worst;
}

double max_abs(const std::vector<std::uint8_t>& a, DType dtype) {
  const std::int64_t n = std::int64_t(a.size()) / dtype_bytes(dtype);
  double worst = 0;
  for (std::int64_t i = 0; i < n; ++i)
    worst = std::max(worst, std::abs(double(load_elem(a.data(), i, dtype))));
  return worst;
}

std::size_t count_diff(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b,
                       DType dtype) {
  const std::size_t w = dtype_bytes(dtype), n = a.size() / w;
  std::size_t count = 0;
  for (std::size_t i = 0; i < n; ++i)
    count += std::memcmp(a.data() + i * w, b.data() + i * w, w) != 0 ? 1 : 0;
  return count;
}

std::vector<std::int32_t> random_positions(int n, int limit, bool signed_positions,
                                           std::mt19937& rng) {
  std::uniform_int_distribution<int> dist(signed_positions ? -(limit - 1) : 0, limit - 1);
  std::vector<std::int32_t> p(n);
  for (auto& x : p) x = dist(rng);
  return p;
}

std::vector<std::int32_t> distinct(int n, int range, std::mt19937& rng) {
  std::vector<std::int32_t> all(range);
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(n);
  return all;
}

}  // namespace inferscale::test
