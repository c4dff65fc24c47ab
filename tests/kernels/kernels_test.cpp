// GPU: each kernel against its CPU reference over a grid of shapes, dtypes and layouts.
// Rotations and copies are bit-exact; RMSNorm and SwiGLU reduce or exponentiate differently on
// the device and are held to a stated tolerance. Output buffers are poisoned first and compared
// whole, so a missed or stray write fails too.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/argmax.cuh"
#include "kernels/cuda_check.h"
#include "kernels/inject.cuh"
#include "kernels/kv_append.cuh"
#include "kernels/reference/argmax.h"
#include "kernels/reference/inject.h"
#include "kernels/reference/kv_append.h"
#include "kernels/reference/numeric.h"
#include "kernels/reference/rms_norm.h"
#include "kernels/reference/rope.h"
#include "kernels/reference/silu_mul.h"
#include "kernels/reference/staged_copy.h"
#include "kernels/rms_norm.cuh"
#include "kernels/rope.cuh"
#include "kernels/silu_mul.cuh"
#include "kernels/staged_copy.cuh"
#include "tests/catch.h"
#include "tests/kernels/kernels_test_util.h"

using namespace inferscale;
using test::DeviceBuffer;
using test::DeviceTable;
using test::distinct;
using test::HostTable;
using test::make_table;
using test::random_positions;

namespace {

constexpr DType kDtypes[] = {DType::kF32, DType::kBF16, DType::kF16};
constexpr RopeStyle kStyles[] = {RopeStyle::kNeox, RopeStyle::kGptj};

}  // namespace

TEST_CASE("rope kernel matches its reference bit for bit") {
  if (!test::cuda_device_available()) INFERSCALE_SKIP("no CUDA device");
  std::mt19937 rng(1);
  struct Shape {
    int tokens, heads, head_dim, pad;
    bool in_place, forward, negative;
  };
  const Shape shapes[] = {
      {1, 1, 64, 0, true, true, false},      {37, 4, 128, 0, false, true, true},
      {300, 32, 128, 0, true, false, false}, {19, 8, 80, 0, false, false, true},
      {23, 3, 72, 0, true, true, true},      {11, 2, 18, 0, false, true, false},
      {29, 5, 64, 2, false, true, true},     {13, 4, 128, 1, true, false, false},
  };
  for (const Shape& s : shapes) {
    for (DType dt : kDtypes) {
      for (RopeStyle st : kStyles) {
        CAPTURE(s.tokens, s.heads, s.head_dim, s.pad, s.in_place, s.forward, dtype_name(dt),
                rope_style_name(st));
        const HostTable table = make_table(s.head_dim, 2048);
        const DeviceTable dtable(table);
        const std::int64_t head_stride = s.head_dim + s.pad;  // pad > 0 breaks 16-byte vectors
        const std::int64_t token_stride = head_stride * s.heads + s.pad;
        const std::size_t n = std::size_t(token_stride) * s.tokens;
        const auto x = test::random_elems(n, dt, rng);
        auto ref = s.in_place ? x : test::poison_elems(n, dt);
        const auto pos = random_positions(s.tokens, table.positions, s.negative, rng);

        RopeParams p;
        p.positions = pos.data();
        p.table = table.view();
        p.token_stride = token_stride;
        p.head_stride = head_stride;
        p.tokens = s.tokens;
        p.heads = s.heads;
        p.head_dim = s.head_dim;
        p.dtype = dt;
        p.style = st;
        p.in = s.in_place ? ref.data() : x.data();
        p.out = ref.data();
        if (s.forward)
          rope_rotate_reference<true>(p);
        else
          rope_rotate_reference<false>(p);

        DeviceBuffer din(x), dout(s.in_place ? x : test::poison_elems(n, dt)), dpos(pos);
        p.in = s.in_place ? dout.get() : din.get();
        p.out = dout.get();
        p.positions = static_cast<const std::int32_t*>(dpos.get());
        p.table = dtable.view();
        if (s.forward) {
          INFERSCALE_CUDA_CHECK(rope_rotate_launch<true>(p, nullptr));
        } else {
          INFERSCALE_CUDA_CHECK(rope_rotate_launch<false>(p, nullptr));
        }
        test::device_sync();
        CHECK(dout.download() == ref);
      }
    }
  }
}

TEST_CASE("fused inject kernel matches its reference bit for bit") {
  if (!test::cuda_device_available()) INFERSCALE_SKIP("no CUDA device");
  std::mt19937 rng(2);
  struct Shape {
    int tokens, layers, kv_heads, head_dim, blocks, cache_slots;
    bool negative;
  };
  const Shape shapes[] = {
      {1, 1, 1, 64, 1, 4, false},       {50, 3, 2, 128, 8, 200, false},
      {777, 4, 8, 128, 60, 1000, true}, {40, 32, 8, 128, 4, 64, false},
      {33, 2, 3, 72, 5, 90, true},      {17, 2, 2, 80, 3, 40, false},
  };
  for (const Shape& s : shapes) {
    for (DType dt : kDtypes) {
      for (RopeStyle st : kStyles) {
        CAPTURE(s.tokens, s.layers, s.kv_heads, s.head_dim, dtype_name(dt), rope_style_name(st));
        const int bt = 16;
        const std::int64_t row = std::int64_t(s.kv_heads) * s.head_dim;
        const std::int64_t layer_stride = 2 * bt * row;  // [layers, 2, block_tokens, kv, d]
        const std::int64_t block_stride = s.layers * layer_stride;
        const std::size_t pool_n = std::size_t(block_stride) * s.blocks;
        const std::int64_t cache_layer = s.cache_slots * row;
        const std::size_t cache_n = std::size_t(cache_layer) * s.layers;
        const HostTable table = make_table(s.head_dim, 4096);
        const DeviceTable dtable(table);

        const auto pool = test::random_elems(pool_n, dt, rng);
        std::uniform_int_distribution<int> src_dist(0, s.blocks * bt - 1);
        std::vector<std::int32_t> src(s.tokens);
        for (auto& v : src) v = src_dist(rng);  // a pool slot may be injected twice
        const auto dst = distinct(s.tokens, s.cache_slots, rng);
        const auto pos = random_positions(s.tokens, table.positions, s.negative, rng);
        auto ref_k = test::poison_elems(cache_n, dt), ref_v = ref_k;

        InjectParams p;
        const int w = dtype_bytes(dt);
        p.pool = {const_cast<std::uint8_t*>(pool.data()),
                  const_cast<std::uint8_t*>(pool.data()) + bt * row * w, block_stride, layer_stride,
                  bt};
        p.cache_k = ref_k.data();
        p.cache_v = ref_v.data();
        p.cache_layer_stride = cache_layer;
        p.src_slots = src.data();
        p.dst_slots = dst.data();
        p.positions = pos.data();
        p.table = table.view();
        p.tokens = s.tokens;
        p.layers = s.layers;
        p.kv_heads = s.kv_heads;
        p.head_dim = s.head_dim;
        p.dtype = dt;
        p.style = st;
        kv_inject_reference(p);

        DeviceBuffer dpool(pool), dk(test::poison_elems(cache_n, dt)),
            dv(test::poison_elems(cache_n, dt)), dsrc(src), ddst(dst), dpos(pos);
        auto* base = static_cast<std::uint8_t*>(dpool.get());
        p.pool.k = base;
        p.pool.v = base + bt * row * w;
        p.cache_k = dk.get();
        p.cache_v = dv.get();
        p.src_slots = static_cast<const std::int32_t*>(dsrc.get());
        p.dst_slots = static_cast<const std::int32_t*>(ddst.get());
        p.positions = static_cast<const std::int32_t*>(dpos.get());
        p.table = dtable.view();
        INFERSCALE_CUDA_CHECK(kv_inject_launch(p, nullptr));
        test::device_sync();
        CHECK(dk.download() == ref_k);
        CHECK(dv.download() == ref_v);
      }
    }
  }
}

TEST_CASE("kv_append kernel matches its reference bit for bit") {
  if (!test::cuda_device_available()) INFERSCALE_SKIP("no CUDA device");
  std::mt19937 rng(3);
  struct Shape {
    int tokens, heads, kv_heads, head_dim, pad;
    bool store, rotated;
  };
  const Shape shapes[] = {
      {1, 1, 1, 64, 0, false, false},  {24, 32, 8, 128, 0, true, false},
      {300, 8, 2, 128, 0, true, true}, {45, 9, 3, 64, 0, false, false},
      {31, 4, 4, 72, 0, true, false},  {20, 4, 2, 64, 2, true, true},
  };
  for (const Shape& s : shapes) {
    for (DType dt : kDtypes) {
      for (RopeStyle st : kStyles) {
        CAPTURE(s.tokens, s.heads, s.kv_heads, s.head_dim, s.store, s.rotated, dtype_name(dt),
                rope_style_name(st));
        const int bt = 16, w = dtype_bytes(dt);
        const std::int64_t d = s.head_dim, row = std::int64_t(s.kv_heads) * d;
        const std::int64_t qkv_stride = (s.heads + 2 * s.kv_heads) * d + s.pad;
        const int cache_slots = s.tokens + 40, blocks = (s.tokens + bt - 1) / bt + 2;
        const std::int64_t block_stride = 2 * bt * row;  // one layer: [blocks, 2, bt, kv, d]
        const HostTable table = make_table(s.head_dim, 4096);
        const DeviceTable dtable(table);

        const auto qkv = test::random_elems(std::size_t(qkv_stride) * s.tokens, dt, rng);
        const auto slots = distinct(s.tokens, cache_slots, rng);
        std::vector<std::int32_t> pool_slots = distinct(s.tokens, blocks * bt, rng);
        for (std::size_t i = 0; i < pool_slots.size(); i += 3) pool_slots[i] = -1;
        const auto pos = random_positions(s.tokens, table.positions, false, rng);
        const std::size_t q_n = std::size_t(s.tokens) * s.heads * d;
        const std::size_t cache_n = std::size_t(cache_slots) * row;
        const std::size_t pool_n = std::size_t(block_stride) * blocks;
        auto ref_q = test::poison_elems(q_n, dt), ref_k = test::poison_elems(cache_n, dt),
             ref_v = ref_k, ref_pool = test::poison_elems(pool_n, dt);

        KvAppendParams p;
        p.qkv = qkv.data();
        p.qkv_stride = qkv_stride;
        p.q_out = ref_q.data();
        p.cache_k = ref_k.data();
        p.cache_v = ref_v.data();
        p.cache_slots = slots.data();
        if (s.store) {
          p.pool = {ref_pool.data(), ref_pool.data() + bt * row * w, block_stride, 0, bt};
          p.pool_slots = pool_slots.data();
        }
        p.pool_rotated = s.rotated;
        p.positions = pos.data();
        p.table = table.view();
        p.tokens = s.tokens;
        p.heads = s.heads;
        p.kv_heads = s.kv_heads;
        p.head_dim = s.head_dim;
        p.dtype = dt;
        p.style = st;
        kv_append_reference(p);

        DeviceBuffer dqkv(qkv), dq(test::poison_elems(q_n, dt)),
            dk(test::poison_elems(cache_n, dt)), dv(test::poison_elems(cache_n, dt)),
            dpool(test::poison_elems(pool_n, dt)), dslots(slots), dpslots(pool_slots), dpos(pos);
        p.qkv = dqkv.get();
        p.q_out = dq.get();
        p.cache_k = dk.get();
        p.cache_v = dv.get();
        p.cache_slots = static_cast<const std::int32_t*>(dslots.get());
        if (s.store) {
          auto* base = static_cast<std::uint8_t*>(dpool.get());
          p.pool.k = base;
          p.pool.v = base + bt * row * w;
          p.pool_slots = static_cast<const std::int32_t*>(dpslots.get());
        }
        p.positions = static_cast<const std::int32_t*>(dpos.get());
        p.table = dtable.view();
        INFERSCALE_CUDA_CHECK(kv_append_launch(p, nullptr));
        test::device_sync();
        CHECK(dq.download() == ref_q);
        CHECK(dk.download() == ref_k);
        CHECK(dv.download() == ref_v);
        CHECK(dpool.download() == ref_pool);
      }
    }
  }
}

TEST_CASE("rotation at injection is bit-identical to the rotation of a native prefill") {
  // The same pre-RoPE keys go (a) through kv_append, as a native prefill computes them, and
  // (b) into the pool (stored by kv_append), then through the fused inject kernel to the same
  // positions. Both rows must be equal bit for bit: one table, one rotation routine.
  if (!test::cuda_device_available()) INFERSCALE_SKIP("no CUDA device");
  std::mt19937 rng(4);
  for (DType dt : kDtypes) {
    for (RopeStyle st : kStyles) {
      CAPTURE(dtype_name(dt), rope_style_name(st));
      test::check_inject_matches_append(dt, st, rng);
    }
  }
}

TEST_CASE("rms_norm kernel matches its reference within fp32 rounding") {
  if (!test::cuda_device_available()) INFERSCALE_SKIP("no CUDA device");
  std::mt19937 rng(5);
  struct Shape {
    std::int64_t rows, cols, pad;
  };
  const Shape shapes[] = {{1, 64, 0},  {24, 4096, 0}, {300, 576, 0},
                          {7, 100, 0}, {9, 3584, 4},  {5, 64, 3}};
  for (const Shape& s : shapes) {
    for (DType dt : kDtypes) {
      CAPTURE(s.rows, s.cols, s.pad, dtype_name(dt));
      const std::int64_t stride = s.cols + s.pad;
      const auto x = test::random_elems(std::size_t(stride * s.rows), dt, rng, 2.0f);
      const auto wgt = test::random_elems(std::size_t(s.cols), dt, rng);
      auto ref = test::poison_elems(std::size_t(stride * s.rows), dt);
      RmsNormParams p;
      p.x = x.data();
      p.out = ref.data();
      p.weight = wgt.data();
      p.rows = s.rows;
      p.cols = s.cols;
      p.x_stride = p.out_stride = stride;
      p.eps = 1e-5f;
      p.dtype = dt;
      rms_norm_reference(p);
      DeviceBuffer dx(x), dw(wgt), dout(test::poison_elems(std::size_t(stride * s.rows), dt));
      p.x = dx.get();
      p.weight = dw.get();
      p.out = dout.get();
      INFERSCALE_CUDA_CHECK(rms_norm_launch(p, nullptr));
      test::device_sync();
      // fp32: the sums of squares differ in order (relative 1e-6 at these sizes: 16 ulp);
      // 16-bit outputs: at most one step of the output's rounding.
      CHECK(test::max_ulp_diff(dout.download(), ref, dt) <= (dt == DType::kF32 ? 16u : 1u));
    }
  }
}

TEST_CASE("silu_mul kernel matches its reference within exp's rounding") {
  if (!test::cuda_device_available()) INFERSCALE_SKIP("no CUDA device");
  std::mt19937 rng(6);
  struct Shape {
    std::int64_t rows, cols, pad;
  };
  const Shape shapes[] = {{1, 64, 0}, {37, 1536, 0}, {24, 14336, 0}, {5, 100, 0}, {3, 64, 2}};
  for (const Shape& s : shapes) {
    for (DType dt : kDtypes) {
      CAPTURE(s.rows, s.cols, s.pad, dtype_name(dt));
      const std::int64_t in_stride = 2 * s.cols + s.pad, out_stride = s.cols + s.pad;
      const auto in = test::random_elems(std::size_t(in_stride * s.rows), dt, rng, 3.0f);
      auto ref = test::poison_elems(std::size_t(out_stride * s.rows), dt);
      SiluMulParams p;
      p.gate_up = in.data();
      p.out = ref.data();
      p.rows = s.rows;
      p.cols = s.cols;
      p.in_stride = in_stride;
      p.out_stride = out_stride;
      p.dtype = dt;
      silu_mul_reference(p);
      DeviceBuffer din(in), dout(test::poison_elems(std::size_t(out_stride * s.rows), dt));
      p.gate_up = din.get();
      p.out = dout.get();
      INFERSCALE_CUDA_CHECK(silu_mul_launch(p, nullptr));
      test::device_sync();
      // expf on the device is within 2 ulp of the host's exp: a few fp32 ulps after the
      // division and product; 16-bit outputs: one step of the output's rounding.
      CHECK(test::max_ulp_diff(dout.download(), ref, dt) <= (dt == DType::kF32 ? 8u : 1u));
    }
  }
}

TEST_CASE("argmax kernel picks its reference's column in every row") {
  if (!test::cuda_device_available()) INFERSCALE_SKIP("no CUDA device");
  std::mt19937 rng(9);
  struct Shape {
    std::int64_t rows, cols, pad;
  };
  // A vocabulary row (128256 columns), a batch of them, short and odd rows, a padded stride
  // (no 16-byte vectors), one column.
  const Shape shapes[] = {{1, 128256, 0}, {64, 128256, 0}, {3, 1000, 5},
                          {7, 33, 0},     {2, 1, 0},       {5, 49152, 3}};
  const float nan = std::nanf("");
  for (const Shape& s : shapes) {
    for (DType dt : kDtypes) {
      CAPTURE(s.rows, s.cols, s.pad, dtype_name(dt));
      const std::int64_t stride = s.cols + s.pad;
      auto in = test::random_elems(std::size_t(stride * s.rows), dt, rng, 4.0f);
      std::uniform_int_distribution<std::int64_t> col(0, s.cols - 1);
      for (std::int64_t r = 0; r < s.rows; ++r) {
        const std::int64_t base = r * stride;
        switch (r % 4) {
          case 1:  // small integers: the maximum is tied across many columns
            for (std::int64_t c = 0; c < s.cols; ++c) {
              store_elem(in.data(), base + c, dt, float(col(rng) % 8));
            }
            break;
          case 2:  // two NaNs: the first one wins
            store_elem(in.data(), base + col(rng), dt, nan);
            store_elem(in.data(), base + col(rng), dt, nan);
            break;
          case 3:  // all -inf but for the padding
            for (std::int64_t c = 0; c < s.cols; ++c)
              store_elem(in.data(), base + c, dt, -INFINITY);
            break;
        }
        for (std::int64_t c = s.cols; c < stride; ++c) store_elem(in.data(), base + c, dt, 1e4f);
      }
      std::vector<std::int32_t> ref(std::size_t(s.rows), -1);
      ArgmaxParams p;
      p.in = in.data();
      p.out = ref.data();
      p.rows = s.rows;
      p.cols = s.cols;
      p.stride = stride;
      p.dtype = dt;
      argmax_reference(p);
      DeviceBuffer din(in), dout(std::vector<std::int32_t>(std::size_t(s.rows), -1));
      p.in = din.get();
      p.out = static_cast<std::int32_t*>(dout.get());
      INFERSCALE_CUDA_CHECK(argmax_launch(p, nullptr));
      test::device_sync();
      const std::vector<std::uint8_t> got_bytes = dout.download();
      std::vector<std::int32_t> got(std::size_t(s.rows));
      std::memcpy(got.data(), got_bytes.data(), got_bytes.size());
      CHECK(got == ref);
    }
  }
}

TEST_CASE("staged copy moves words between page-locked host memory and the device") {
  if (!test::cuda_device_available()) INFERSCALE_SKIP("no CUDA device");
  std::mt19937 rng(7);
  for (const std::size_t words :
       {std::size_t(1), std::size_t(255), std::size_t(257), std::size_t(100003)}) {
    CAPTURE(words);
    std::uint32_t* host_in = nullptr;
    std::uint32_t* host_out = nullptr;
    std::uint32_t* dev = nullptr;
    INFERSCALE_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host_in), words * 4, 0));
    INFERSCALE_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host_out), words * 4, 0));
    INFERSCALE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&dev), words * 4));
    std::vector<std::uint32_t> ref(words, 0);
    for (std::size_t i = 0; i < words; ++i) host_in[i] = std::uint32_t(rng());
    std::fill(host_out, host_out + words, 0xdeadbeefu);
    staged_copy_reference(ref.data(), host_in, words);
    INFERSCALE_CUDA_CHECK(staged_copy_launch(dev, host_in, words, nullptr));   // host -> device
    INFERSCALE_CUDA_CHECK(staged_copy_launch(host_out, dev, words, nullptr));  // device -> host
    test::device_sync();
    CHECK(std::equal(ref.begin(), ref.end(), host_out));
    cudaFree(dev);
    cudaFreeHost(host_out);
    cudaFreeHost(host_in);
  }
}
