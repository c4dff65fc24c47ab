// GPU: an L2 prefetch of ranges of device memory (aligned or not, down to one byte, empty)
// launches without error and changes no byte, as its reference says (a cache hint).
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cuda_check.h"
#include "kernels/l2_prefetch.cuh"
#include "kernels/reference/l2_prefetch.h"
#include "tests/catch.h"
#include "tests/kernels/kernels_test_util.h"

using namespace inferscale;

TEST_CASE("an L2 prefetch changes no memory, whatever the range") {
  if (!test::cuda_device_available()) INFERSCALE_SKIP("no CUDA device");
  std::mt19937 rng(3);
  std::vector<std::uint8_t> host(std::size_t(3) << 20);
  for (auto& b : host) b = std::uint8_t(rng());
  test::DeviceBuffer buf(host);
  const auto* base = static_cast<const std::uint8_t*>(buf.get());
  const std::size_t ranges[][2] = {{0, host.size()}, {1, 1},       {127, 130},
                                   {4096, 0},        {77, 100000}, {host.size() - 5, 5}};
  for (const auto& r : ranges) {
    INFO("offset " << r[0] << " bytes " << r[1]);
    CHECK(l2_prefetch_launch(base + r[0], r[1], nullptr) == cudaSuccess);
    l2_prefetch_reference(host.data() + r[0], r[1]);
  }
  test::device_sync();
  CHECK(buf.download() == host);
}
