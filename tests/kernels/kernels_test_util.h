#pragma once
// @brief Helpers of the kernel-vs-reference tests: device buffers, typed random data, ulp
// distances. Host code only (CUDA runtime API).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "kernels/kernel_types.h"
#include "tests/kernels/host_table.h"

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

/// Largest |a - b| over two typed buffers, and largest |b|, widened to fp32.
double max_abs_diff(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b,
                    DType dtype);
double max_abs(const std::vector<std::uint8_t>& a, DType dtype);
/// Elements of two typed buffers that differ in any bit.
std::size_t count_diff(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b,
                       DType dtype);

/// A host table's copy on the device.
struct DeviceTable {
  DeviceBuffer cos, sin;
  std::int32_t positions;
  explicit DeviceTable(const HostTable& h) : cos(h.cos), sin(h.sin), positions(h.positions) {}
  RopeTableView view() const {
    return {static_cast<const float*>(cos.get()), static_cast<const float*>(sin.get()), positions};
  }
};

/// n positions drawn from [0, limit) (from (-limit, limit) when `signed_positions`).
std::vector<std::int32_t> random_positions(int n, int limit, bool signed_positions,
                                           std::mt19937& rng);

/// n distinct values drawn from [0, range).
std::vector<std::int32_t> distinct(int n, int range, std::mt19937& rng);

/// The same pre-RoPE keys of 200 tokens (32 heads, 8 KV heads, head_dim 128) go through
/// kv_append into the first half of a cache (rotated, as a native prefill writes them) and into
/// the pool, then through the fused inject kernel from the pool to the same positions in the
/// second half; CHECKs that both halves of K and of V are equal bit for bit. With `residual`
/// (called once, after the QKV rows are drawn: [200, 4096] rows of the dtype), kv_append first
/// scales each token by its folded norm's 1 / rms.
void check_inject_matches_append(DType dt, RopeStyle style, std::mt19937& rng,
                                 const std::function<std::vector<std::uint8_t>()>& residual = {});

}  // namespace inferscale::test
