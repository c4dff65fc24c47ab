#include "tests/kernels/kernels_test_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>

#include "kernels/cuda_check.h"
#include "kernels/inject.cuh"
#include "kernels/kv_append.cuh"
#include "kernels/reference/numeric.h"
#include "kernels/reference/rope.h"
#include "tests/catch.h"

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

void check_inject_matches_append(DType dt, RopeStyle st, std::mt19937& rng,
                                 const std::function<std::vector<std::uint8_t>()>& residual) {
  const int tokens = 200, heads = 32, kv = 8, d = 128, bt = 16, hidden = 4096;
  const int w = dtype_bytes(dt);
  const std::int64_t row = std::int64_t(kv) * d, stride = (heads + 2 * kv) * d;
  const int blocks = (tokens + bt - 1) / bt;
  const HostTable table = make_table(d, 8192);
  const DeviceTable dtable(table);
  std::vector<std::int32_t> slots(tokens), pool_slots(tokens), inject_dst(tokens);
  std::iota(slots.begin(), slots.end(), 0);
  std::iota(pool_slots.begin(), pool_slots.end(), 0);
  std::iota(inject_dst.begin(), inject_dst.end(), tokens);  // second half of the cache
  const auto pos = random_positions(tokens, table.positions, false, rng);
  DeviceBuffer dqkv(random_elems(std::size_t(stride) * tokens, dt, rng, 3.0f)),
      dh(residual ? residual() : std::vector<std::uint8_t>(16)),
      dq(std::size_t(tokens) * heads * d * w), dk(std::size_t(2 * tokens) * row * w),
      dv(std::size_t(2 * tokens) * row * w), dpool(std::size_t(blocks) * 2 * bt * row * w),
      dslots(slots), dpslots(pool_slots), ddst(inject_dst), dpos(pos);
  auto* pool = static_cast<std::uint8_t*>(dpool.get());

  KvAppendParams a;
  a.qkv = dqkv.get();
  a.qkv_stride = stride;
  a.q_out = dq.get();
  a.cache_k = dk.get();
  a.cache_v = dv.get();
  a.cache_slots = static_cast<const std::int32_t*>(dslots.get());
  a.pool = {pool, pool + bt * row * w, 2 * bt * row, 0, bt};
  a.pool_slots = static_cast<const std::int32_t*>(dpslots.get());
  a.positions = static_cast<const std::int32_t*>(dpos.get());
  a.table = dtable.view();
  if (residual) a.norm = {dh.get(), hidden, hidden, 1e-5f};
  a.tokens = tokens;
  a.heads = heads;
  a.kv_heads = kv;
  a.head_dim = d;
  a.dtype = dt;
  a.style = st;
  INFERSCALE_CUDA_CHECK(kv_append_launch(a, nullptr));

  InjectParams b;
  b.pool = {pool, pool + bt * row * w, 2 * bt * row, 2 * bt * row, bt};
  b.cache_k = dk.get();
  b.cache_v = dv.get();
  b.cache_layer_stride = 2 * tokens * row;
  b.src_slots = static_cast<const std::int32_t*>(dpslots.get());
  b.dst_slots = static_cast<const std::int32_t*>(ddst.get());
  b.positions = static_cast<const std::int32_t*>(dpos.get());
  b.table = dtable.view();
  b.tokens = tokens;
  b.layers = 1;
  b.kv_heads = kv;
  b.head_dim = d;
  b.dtype = dt;
  b.style = st;
  INFERSCALE_CUDA_CHECK(kv_inject_launch(b, nullptr));
  test::device_sync();

  const auto k = dk.download(), v = dv.download();
  const std::size_t half = std::size_t(tokens) * row * w;
  CHECK(std::equal(k.begin(), k.begin() + half, k.begin() + half));
  CHECK(std::equal(v.begin(), v.begin() + half, v.begin() + half));
}

}  // namespace inferscale::test
