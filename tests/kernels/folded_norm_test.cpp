// GPU: kv_append and silu_mul with a folded RMSNorm's per-row scale (RmsScaleView) against their
// references, over shapes (Llama-3.1-8B's among them), dtypes and layouts, including rows too
// short or misaligned for 16-byte vectors. The device sums squares in fp32 in its own order, the
// reference in double: 1 / rms differs by a few fp32 ulps, so a scaled element may round one
// step apart; the tolerances below allow that and no more. Keys stored in the pool by a scaled
// kv_append and injected to the same positions must still equal the cache's bit for bit.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cuda_check.h"
#include "kernels/inject.cuh"
#include "kernels/kv_append.cuh"
#include "kernels/reference/kv_append.h"
#include "kernels/reference/numeric.h"
#include "kernels/reference/silu_mul.h"
#include "kernels/silu_mul.cuh"
#include "tests/catch.h"
#include "tests/kernels/kernels_test_util.h"

using namespace inferscale;
using test::DeviceBuffer;
using test::DeviceTable;
using test::HostTable;

namespace {

constexpr DType kDtypes[] = {DType::kF32, DType::kBF16, DType::kF16};
constexpr RopeStyle kStyles[] = {RopeStyle::kNeox, RopeStyle::kGptj};

/// Residual rows [rows, stride] whose scales differ by up to 10x between rows.
std::vector<std::uint8_t> residual(std::int64_t rows, std::int64_t stride, DType dt,
                                   std::mt19937& rng) {
  std::uniform_real_distribution<float> scale(0.3f, 3.0f);
  std::vector<std::uint8_t> out;
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto row = test::random_elems(std::size_t(stride), dt, rng, scale(rng));
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

/// Largest |kernel - reference| allowed over a tensor whose largest |reference| is `scale`: a
/// 16-bit element may be one rounding step off before RoPE mixes it with its pair, and once
/// after (4 steps at the tensor's scale); fp32 moves by the relative error of 1 / rms.
double rope_tolerance(DType dt, double scale) {
  switch (dt) {
    case DType::kF32:
      return scale / 65536.0;
    case DType::kBF16:
      return scale * 4.0 / 128.0;
    case DType::kF16:
      return scale * 4.0 / 1024.0;
  }
  return 0;
}

/// Compares a 16-bit or fp32 output of the scaled kv_append with its reference.
void check_close(const std::vector<std::uint8_t>& got, const std::vector<std::uint8_t>& want,
                 DType dt) {
  const double diff = test::max_abs_diff(got, want, dt), scale = test::max_abs(want, dt);
  INFO("max |diff| " << diff << " at scale " << scale);
  CHECK(diff <= rope_tolerance(dt, scale));
  if (dt != DType::kF32) {
    // A rounding flip needs the product within 1e-6 of a rounding boundary: rare.
    const std::size_t n = want.size() / dtype_bytes(dt), differ = test::count_diff(got, want, dt);
    INFO(differ << " of " << n << " elements differ");
    CHECK(differ * 100 <= n);
  }
}

}  // namespace

TEST_CASE("kv_append kernel with a folded norm matches its reference") {
  if (!test::cuda_device_available()) INFERSCALE_SKIP("no CUDA device");
  std::mt19937 rng(31);
  struct Shape {
    int tokens, heads, kv_heads, head_dim, pad, hidden, hidden_pad;
    bool store, rotated;
  };
  const Shape shapes[] = {
      {1, 32, 8, 128, 0, 4096, 0, false, false},  // Llama-3.1-8B decode
      {32, 32, 8, 128, 0, 4096, 0, true, false},  // Llama-3.1-8B, 32 tokens, fact store
      {300, 8, 2, 128, 0, 1024, 0, true, true},  {45, 9, 3, 64, 0, 576, 3, false, false},
      {20, 4, 2, 64, 2, 100, 0, true, true},     {7, 4, 4, 72, 0, 4100, 0, true, false},
      {3, 1, 1, 16, 0, 8, 1, false, false},
  };
  for (const Shape& s : shapes) {
    for (DType dt : kDtypes) {
      for (RopeStyle st : kStyles) {
        CAPTURE(s.tokens, s.heads, s.kv_heads, s.head_dim, s.pad, s.hidden, s.hidden_pad, s.store,
                s.rotated, dtype_name(dt), rope_style_name(st));
        const int bt = 16, w = dtype_bytes(dt);
        const std::int64_t d = s.head_dim, row = std::int64_t(s.kv_heads) * d;
        const std::int64_t qkv_stride = (s.heads + 2 * s.kv_heads) * d + s.pad;
        const std::int64_t h_stride = s.hidden + s.hidden_pad;
        const int cache_slots = s.tokens + 40, blocks = (s.tokens + bt - 1) / bt + 2;
        const std::int64_t block_stride = 2 * bt * row;
        const HostTable table = test::make_table(s.head_dim, 4096);
        const DeviceTable dtable(table);

        const auto qkv = test::random_elems(std::size_t(qkv_stride) * s.tokens, dt, rng, 3.0f);
        const auto h = residual(s.tokens, h_stride, dt, rng);
        const auto slots = test::distinct(s.tokens, cache_slots, rng);
        std::vector<std::int32_t> pool_slots = test::distinct(s.tokens, blocks * bt, rng);
        for (std::size_t i = 0; i < pool_slots.size(); i += 3) pool_slots[i] = -1;
        const auto pos = test::random_positions(s.tokens, table.positions, false, rng);
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
        p.norm = {h.data(), h_stride, s.hidden, 1e-5f};
        p.tokens = s.tokens;
        p.heads = s.heads;
        p.kv_heads = s.kv_heads;
        p.head_dim = s.head_dim;
        p.dtype = dt;
        p.style = st;
        kv_append_reference(p);

        DeviceBuffer dqkv(qkv), dh(h), dq(test::poison_elems(q_n, dt)),
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
        p.norm.x = dh.get();
        INFERSCALE_CUDA_CHECK(kv_append_launch(p, nullptr));
        test::device_sync();
        {
          INFO("q");
          check_close(dq.download(), ref_q, dt);
        }
        {
          INFO("cache k");
          check_close(dk.download(), ref_k, dt);
        }
        {
          INFO("cache v");
          check_close(dv.download(), ref_v, dt);
        }
        {
          INFO("pool");
          check_close(dpool.download(), ref_pool, dt);
        }
      }
    }
  }
}

TEST_CASE("silu_mul kernel with a folded norm matches its reference") {
  if (!test::cuda_device_available()) INFERSCALE_SKIP("no CUDA device");
  std::mt19937 rng(32);
  struct Shape {
    std::int64_t rows, cols, pad, hidden, hidden_pad;
  };
  const Shape shapes[] = {
      {1, 14336, 0, 4096, 0}, {32, 14336, 0, 4096, 0},  // Llama-3.1-8B decode, 32 tokens
      {200, 1536, 0, 576, 0}, {130, 2816, 0, 1024, 0},  // past 128 rows: 4 vectors a thread
      {5, 100, 0, 100, 1},    {3, 64, 2, 72, 3},
  };
  for (const Shape& s : shapes) {
    for (DType dt : kDtypes) {
      CAPTURE(s.rows, s.cols, s.pad, s.hidden, s.hidden_pad, dtype_name(dt));
      const std::int64_t in_stride = 2 * s.cols + s.pad, out_stride = s.cols + s.pad;
      const std::int64_t h_stride = s.hidden + s.hidden_pad;
      const auto in = test::random_elems(std::size_t(in_stride * s.rows), dt, rng, 3.0f);
      const auto h = residual(s.rows, h_stride, dt, rng);
      auto ref = test::poison_elems(std::size_t(out_stride * s.rows), dt);
      SiluMulParams p;
      p.gate_up = in.data();
      p.out = ref.data();
      p.rows = s.rows;
      p.cols = s.cols;
      p.in_stride = in_stride;
      p.out_stride = out_stride;
      p.norm = {h.data(), h_stride, s.hidden, 1e-5f};
      p.dtype = dt;
      silu_mul_reference(p);
      DeviceBuffer din(in), dh(h), dout(test::poison_elems(std::size_t(out_stride * s.rows), dt));
      p.gate_up = din.get();
      p.out = dout.get();
      p.norm.x = dh.get();
      INFERSCALE_CUDA_CHECK(silu_mul_launch(p, nullptr));
      test::device_sync();
      // fp32: 1 / rms a few ulps apart, amplified up to about 10x by silu's slope at the
      // gate's tails, plus expf's 2 ulp; 16-bit outputs: one step of the output's rounding.
      CHECK(test::max_ulp_diff(dout.download(), ref, dt) <= (dt == DType::kF32 ? 256u : 1u));
    }
  }
}

TEST_CASE("keys stored by a scaled kv_append kernel inject bit-identically to the cache's") {
  // As "rotation at injection is bit-identical to the rotation of a native prefill"
  // (kernels_test.cpp), with the folded norm's scale: the pool holds the scaled, rounded,
  // pre-RoPE key that the cache's key was rotated from.
  if (!test::cuda_device_available()) INFERSCALE_SKIP("no CUDA device");
  std::mt19937 rng(33);
  for (DType dt : kDtypes) {
    for (RopeStyle st : kStyles) {
      CAPTURE(dtype_name(dt), rope_style_name(st));
      test::check_inject_matches_append(dt, st, rng, [&] { return residual(200, 4096, dt, rng); });
    }
  }
}
