// CPU tests of the split-KV attention's definition and planning: the reference's causal window,
// GQA head mapping and strides on inputs whose answer is known in closed form; the plan's
// coverage of every shape; the parameter check.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/reference/numeric.h"
#include "kernels/reference/split_kv_attention.h"
#include "kernels/split_kv_plan.h"
#include "tests/catch.h"

using namespace inferscale;

namespace {

/// Two segments in one cache with a gap: (queries, keys) = (3, 7) at row 2 and (1, 4) at 12.
struct Fixture {
  std::int32_t heads = 4, kv_heads = 2, d = 8;
  std::int64_t pad = 0;  // extra elements after each head and token
  std::vector<std::int32_t> cu_q = {0, 3, 4}, k_start = {2, 12}, k_used = {7, 4};
  std::int32_t cache_rows = 20, tokens = 4;
  std::vector<float> q, k, v, out;

  std::int64_t head_stride() const { return d + pad; }
  std::int64_t q_token_stride() const { return heads * head_stride() + pad; }
  std::int64_t kv_row_stride() const { return kv_heads * head_stride() + pad; }

  void allocate() {
    q.assign(std::size_t(tokens * q_token_stride()), 0.0f);
    k.assign(std::size_t(cache_rows * kv_row_stride()), NAN);  // rows outside segments: NaN
    v = k;
    out.assign(q.size(), -7.0f);
  }
  float& qe(int t, int h, int c) {
    return q[std::size_t(t * q_token_stride() + h * head_stride() + c)];
  }
  float& ke(int r, int g, int c) {
    return k[std::size_t(r * kv_row_stride() + g * head_stride() + c)];
  }
  float& ve(int r, int g, int c) {
    return v[std::size_t(r * kv_row_stride() + g * head_stride() + c)];
  }
  float oe(int t, int h, int c) const {
    return out[std::size_t(t * q_token_stride() + h * head_stride() + c)];
  }

  SplitKvAttentionParams params() {
    SplitKvAttentionParams p;
    p.q = q.data();
    p.k = k.data();
    p.v = v.data();
    p.out = out.data();
    p.cu_q = cu_q.data();
    p.k_start = k_start.data();
    p.k_used = k_used.data();
    p.q_token_stride = p.out_token_stride = q_token_stride();
    p.q_head_stride = p.out_head_stride = head_stride();
    p.kv_row_stride = kv_row_stride();
    p.kv_head_stride = head_stride();
    p.segments = 2;
    p.tokens = tokens;
    p.heads = heads;
    p.kv_heads = kv_heads;
    p.head_dim = d;
    p.max_q = 3;
    p.max_k = 7;
    p.scale = 0.5f;
    p.dtype = DType::kF32;
    return p;
  }
};

}  // namespace

TEST_CASE("split-KV reference: equal scores average the causal window of each query") {
  // q = 0: every allowed key weighs the same, so out = mean of v over keys 0 .. k_used - n + i.
  // v[key j of kv head g][c] = 100 g + j + c / 10 names the key, the head and the element.
  for (std::int64_t pad : {0, 3}) {
    Fixture f;
    f.pad = pad;
    f.allocate();
    for (int s = 0; s < 2; ++s) {
      for (int j = 0; j < f.k_used[s]; ++j) {
        for (int g = 0; g < f.kv_heads; ++g) {
          for (int c = 0; c < f.d; ++c) {
            f.ke(f.k_start[s] + j, g, c) = float(j % 3) - 1.0f;  // any finite keys
            f.ve(f.k_start[s] + j, g, c) = 100.0f * g + float(j) + 0.1f * float(c);
          }
        }
      }
    }
    split_kv_attention_reference(f.params());
    CAPTURE(pad);
    for (int s = 0; s < 2; ++s) {
      const int n = f.cu_q[s + 1] - f.cu_q[s];
      for (int i = 0; i < n; ++i) {
        const int last = f.k_used[s] - n + i;
        for (int h = 0; h < f.heads; ++h) {
          const int g = h / (f.heads / f.kv_heads);
          for (int c = 0; c < f.d; ++c) {
            const double expect = 100.0 * g + last / 2.0 + 0.1 * c;
            CHECK(std::abs(f.oe(f.cu_q[s] + i, h, c) - expect) <= 1e-4 * std::abs(expect));
          }
        }
      }
    }
    if (pad > 0) CHECK(f.out[std::size_t(f.head_stride() - 1)] == -7.0f);  // padding untouched
  }
}

TEST_CASE("split-KV reference: a dominant key selects its value, with weights from q.k * scale") {
  Fixture f;
  f.allocate();
  // Keys along e_0 with value j; a query along e_0 with a large norm picks the largest allowed
  // key, one along -e_0 the smallest (key 0).
  for (int s = 0; s < 2; ++s) {
    for (int j = 0; j < f.k_used[s]; ++j) {
      for (int g = 0; g < f.kv_heads; ++g) {
        for (int c = 0; c < f.d; ++c) {
          f.ke(f.k_start[s] + j, g, c) = c == 0 ? float(j) : 0.0f;
          f.ve(f.k_start[s] + j, g, c) = float(j);
        }
      }
    }
  }
  for (int t = 0; t < f.tokens; ++t) {
    for (int h = 0; h < f.heads; ++h) f.qe(t, h, 0) = h % 2 == 0 ? 200.0f : -200.0f;
  }
  split_kv_attention_reference(f.params());
  for (int s = 0; s < 2; ++s) {
    const int n = f.cu_q[s + 1] - f.cu_q[s];
    for (int i = 0; i < n; ++i) {
      for (int h = 0; h < f.heads; ++h) {
        const float expect = h % 2 == 0 ? float(f.k_used[s] - n + i) : 0.0f;
        CHECK(std::abs(f.oe(f.cu_q[s] + i, h, 3) - expect) < 1e-3f);
      }
    }
  }
  // Two keys with scores 0 and a: weights 1 : e^a.
  Fixture two;
  two.cu_q = {0, 1};
  two.k_start = {0};
  two.k_used = {2};
  two.tokens = 1;
  two.heads = two.kv_heads = 1;
  two.allocate();
  for (int c = 0; c < two.d; ++c) {
    two.ke(0, 0, c) = 0.0f;
    two.ke(1, 0, c) = c == 0 ? 1.0f : 0.0f;
    two.ve(0, 0, c) = 0.0f;
    two.ve(1, 0, c) = 1.0f;
  }
  two.qe(0, 0, 0) = 3.0f;
  SplitKvAttentionParams p = two.params();
  p.segments = 1;
  p.max_q = 1;
  p.max_k = 2;
  split_kv_attention_reference(p);  // score of key 1: 0.5 * 3 = 1.5
  CHECK(std::abs(two.oe(0, 0, 0) - 1.0 / (1.0 + std::exp(-1.5))) < 1e-6);
}

TEST_CASE(
    "split-KV reference: 16-bit outputs are the rounded double result, |out| <= weighted |v|") {
  std::mt19937 rng(9);
  std::normal_distribution<float> normal;
  for (DType dt : {DType::kBF16, DType::kF16}) {
    const int tokens = 5, heads = 6, kv_heads = 2, d = 16, rows = 40;
    auto widen = [&](const std::vector<std::uint16_t>& x, std::size_t i) {
      return dt == DType::kBF16 ? bf16_to_float(x[i]) : f16_to_float(x[i]);
    };
    auto fill = [&](std::size_t n) {
      std::vector<std::uint16_t> x(n);
      for (auto& e : x) {
        const float f = normal(rng);
        e = dt == DType::kBF16 ? float_to_bf16(f) : float_to_f16(f);
      }
      return x;
    };
    const auto q = fill(std::size_t(tokens * heads * d)),
               k = fill(std::size_t(rows * kv_heads * d)),
               v = fill(std::size_t(rows * kv_heads * d));
    std::vector<std::uint16_t> out(q.size());
    std::vector<float> wabs(q.size());
    const std::vector<std::int32_t> cu_q = {0, 5}, k_start = {3}, k_used = {30};
    SplitKvAttentionParams p;
    p.q = q.data();
    p.k = k.data();
    p.v = v.data();
    p.out = out.data();
    p.cu_q = cu_q.data();
    p.k_start = k_start.data();
    p.k_used = k_used.data();
    p.q_token_stride = p.out_token_stride = heads * d;
    p.q_head_stride = p.out_head_stride = d;
    p.kv_row_stride = kv_heads * d;
    p.kv_head_stride = d;
    p.segments = 1;
    p.tokens = tokens;
    p.heads = heads;
    p.kv_heads = kv_heads;
    p.head_dim = d;
    p.max_q = tokens;
    p.max_k = 30;
    p.scale = 0.25f;
    p.dtype = dt;
    split_kv_attention_reference(p, wabs.data());
    // Recompute one output in double here and compare after rounding.
    const int t = 2, h = 5, g = h / 3, last = 30 - 5 + t;
    std::vector<double> w(std::size_t(last + 1));
    double mx = -INFINITY;
    for (int j = 0; j <= last; ++j) {
      double dot = 0;
      for (int c = 0; c < d; ++c) {
        dot += double(widen(q, std::size_t((t * heads + h) * d + c))) *
               widen(k, std::size_t(((3 + j) * kv_heads + g) * d + c));
      }
      w[std::size_t(j)] = 0.25 * dot;
      mx = std::max(mx, w[std::size_t(j)]);
    }
    double sum = 0;
    for (double& x : w) sum += (x = std::exp(x - mx));
    for (int c = 0; c < d; ++c) {
      double acc = 0;
      for (int j = 0; j <= last; ++j) {
        acc += w[std::size_t(j)] * widen(v, std::size_t(((3 + j) * kv_heads + g) * d + c));
      }
      const float r = float(acc / sum);
      CHECK(out[std::size_t((t * heads + h) * d + c)] ==
            (dt == DType::kBF16 ? float_to_bf16(r) : float_to_f16(r)));
    }
    for (std::size_t i = 0; i < out.size(); ++i) {
      CHECK(std::abs(widen(out, i)) <= wabs[i] * 1.01f + 1e-6f);
    }
  }
}

TEST_CASE("split-KV plan covers every shape with whole 64-key tiles and no empty split") {
  for (std::int32_t sms : {1, 8, 132}) {
    for (std::int32_t segments : {1, 2, 16, 64, 300}) {
      for (std::int32_t max_q : {1, 2, 5, 16, 32, 64}) {
        for (std::int32_t max_k : {1, 63, 64, 65, 257, 1296, 4096}) {
          if (max_k < max_q) continue;
          for (auto [heads, kv_heads] : {std::pair{32, 8}, {8, 8}, {28, 4}, {12, 4}}) {
            CAPTURE(sms, segments, max_q, max_k, heads, kv_heads);
            const SplitKvPlan plan = split_kv_plan({segments, max_q, max_k, heads, kv_heads}, sms);
            const std::int64_t rows = std::int64_t(max_q) * (heads / kv_heads);
            CHECK((plan.warps_m == 1 || plan.warps_m == 2 || plan.warps_m == 4));
            CHECK(plan.warps_m == (rows <= 16 ? 1 : (rows <= 32 ? 2 : 4)));
            CHECK(std::int64_t(plan.row_tiles) * 16 * plan.warps_m >= rows);
            CHECK(std::int64_t(plan.row_tiles - 1) * 16 * plan.warps_m < rows);
            CHECK(plan.chunk % kSplitKvTileKeys == 0);
            CHECK(std::int64_t(plan.splits) * plan.chunk >= max_k);
            CHECK(std::int64_t(plan.splits - 1) * plan.chunk < max_k);  // the last split has keys
            const std::int64_t blocks =
                std::int64_t(segments) * kv_heads * plan.row_tiles * plan.splits;
            const std::int64_t tiles = (max_k + 63) / 64;
            // Whole tiles per split round the aim of two blocks per multiprocessor down by at
            // most half: at least one block per multiprocessor, unless the keys run out first.
            CHECK((blocks >= sms || plan.splits == tiles));
            CHECK(plan.direct() == (plan.partials() == 1));
          }
        }
      }
    }
  }
  // Forced choices (the kernel tests use them to reach every code path).
  const SplitKvPlan forced = split_kv_plan({1, 3, 1000, 8, 2}, 132, 4, 3);
  CHECK(forced.warps_m == 4);
  CHECK(forced.splits == 3);
  CHECK(forced.chunk == 384);
  CHECK(forced.partials() == 3);
  const SplitKvPlan one = split_kv_plan({1, 64, 100, 32, 8}, 132, 0, 1);
  CHECK(one.splits == 1);
  CHECK(one.direct());
  CHECK(split_kv_plan({1, 1, 10, 8, 8}, 132, 0, 50).splits == 1);  // never more than the tiles
  // A shortest split: batch 1, 32 query tokens over 1296 keys (21 tiles) splits 11 ways in
  // chunks of 2 tiles; with at least 4 tiles a split, 6 ways; never longer than the context.
  const SplitKvPlan free_plan = split_kv_plan({1, 32, 1296, 32, 8}, 132);
  CHECK(free_plan.chunk == 2 * kSplitKvTileKeys);
  CHECK(free_plan.splits == 11);
  const SplitKvPlan longer = split_kv_plan({1, 32, 1296, 32, 8}, 132, 0, 0, 4);
  CHECK(longer.chunk == 4 * kSplitKvTileKeys);
  CHECK(longer.splits == 6);
  CHECK(split_kv_plan({1, 32, 1296, 32, 8}, 132, 0, 0, 100).splits == 1);
  CHECK(split_kv_plan({1, 32, 1296, 32, 8}, 132, 0, 0, 100).chunk == 21 * kSplitKvTileKeys);
  CHECK(split_kv_workspace_floats(one, 64, 32, 128) == 0);
  CHECK(split_kv_workspace_floats(forced, 3, 8, 64) == 3 * 3 * 8 * 66);
}

TEST_CASE("split-KV parameter check names what the kernel does not take") {
  alignas(16) static std::uint16_t buf[64];
  float ws[16];
  SplitKvAttentionParams p;
  p.q = p.k = p.v = buf;
  p.out = buf;
  p.workspace = ws;
  p.q_token_stride = 32 * 128;
  p.q_head_stride = 128;
  p.kv_row_stride = 8 * 128;
  p.kv_head_stride = 128;
  p.out_token_stride = 32 * 128;
  p.out_head_stride = 128;
  p.segments = 1;
  p.tokens = 32;
  p.heads = 32;
  p.kv_heads = 8;
  p.head_dim = 128;
  p.max_q = 32;
  p.max_k = 1296;
  p.plan = split_kv_plan({1, 32, 1296, 32, 8}, 132);
  CHECK(split_kv_attention_check(p).empty());
  auto rejects = [&](auto change) {
    SplitKvAttentionParams bad = p;
    change(bad);
    return !split_kv_attention_check(bad).empty();
  };
  CHECK(rejects([](auto& b) { b.dtype = DType::kF32; }));
  CHECK(rejects([](auto& b) { b.head_dim = 80; }));
  CHECK(rejects([](auto& b) { b.kv_heads = 5; }));
  CHECK(rejects([](auto& b) { b.q = buf + 1; }));
  CHECK(rejects([](auto& b) { b.kv_row_stride = 8 * 128 + 4; }));
  CHECK(rejects([](auto& b) { b.plan.chunk = 100; }));
  CHECK(rejects([](auto& b) { b.plan.splits = 1; }));     // 1 x chunk < max_k
  CHECK(rejects([](auto& b) { b.plan.row_tiles = 1; }));  // 64 rows < 32 x 4
  CHECK(rejects([](auto& b) { b.plan.warps_m = 3; }));
  CHECK(rejects([](auto& b) { b.workspace = nullptr; }));
  CHECK(rejects([](auto& b) { b.max_k = 10; }));  // max_k < max_q
  SplitKvAttentionParams direct = p;
  direct.plan = split_kv_plan({1, 32, 1296, 32, 8}, 132, 4, 1);
  direct.workspace = nullptr;
  CHECK(split_kv_attention_check(direct).empty());  // one partial: no workspace needed
}
