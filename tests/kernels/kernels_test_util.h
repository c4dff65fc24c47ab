#pragma once
// @brief Helpers of the kernel-vs-reference tests: device buffers, typed random data, ulp
// distances. Host code only (CUDA runtime API).

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/kernel_types.h"

namespace inferscale::test {

/// True when a CUDA device can be used.
bool cuda_device_available();

/// A device allocation holding a copy of a host byte vector.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes);
  explicit DeviceBuffer(const std::vector<std::uint8_t>& host);
  template <class T>
  explicit DeviceBuffer(const std::vector<T>& host)
      : DeviceBuffer(std::vector<std::uint8_t>(
            reinterpret_cast<const std::uint8_t*>(host.data()),
            reinterpret_cast<const std::uint8_t*>(host.data()) + host.size() * sizeof(T))) {}
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  std::vector<std::uint8_t> download() const;

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

/// n elements of `dtype` drawn from N(0, scale^2), as raw bytes.
std::vector<std::uint8_t> random_elems(std::size_t n, DType dtype, std::mt19937& rng,
                                       float scale = 1.0f);

/// Bytes of n elements of `dtype`, all set to a NaN-free garbage pattern (poison).
std::vector<std::uint8_t> poison_elems(std::size_t n, DType dtype);

/// Largest distance in units in the last place of `dtype` between two typed buffers.
std::uint64_t max_ulp_diff(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b,
                           DType dtype);

/// Synchronizes the device and throws on any pending error.
void device_sync();

}  // namespace inferscale::test
