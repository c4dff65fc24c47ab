// GPU: the split-KV attention kernel against its reference over a grid of shapes (query
// segments of 1 .. 64 tokens, contexts of 1 .. 4096 keys, heads / kv_heads 32/8, 8/8, 8/1, 12/4,
// 28/4, head_dim 64 and 128, bf16 and fp16, padded strides) and of plans (the device's own, and
// forced ones that reach every warp layout, one or many splits, the direct write and the
// combine).
//
// Inputs make masking mistakes visible: each segment's own keys (those of its query tokens) are
// boosted by about 6 nats towards every query, so a query that saw one key too many or too few
// of them moves by a large fraction of a value; cache rows outside the segments hold NaN, and the
// workspace starts as NaN, so reading either shows in the output. The output's padding must stay
// untouched.
//
// Tolerance (per element, u = unit roundoff of the dtype: 2^-8 bf16, 2^-11 fp16):
//   |out - ref| <= (2u + 2^-12) a + 2u |ref| + 1e-5,  a = sum_j w_j |v_j| / sum_j w_j
// The kernel rounds the softmax weights to the dtype before P V (error <= u a), and both sides
// round their output once (u |ref| each); 2^-12 a covers fp32 score and exp2 rounding, 1e-5 the
// fp16 subnormal weights. Exact arithmetic would need no tolerance at all.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cuda_check.h"
#include "kernels/reference/numeric.h"
#include "kernels/reference/split_kv_attention.h"
#include "kernels/split_kv_attention.cuh"
#include "kernels/split_kv_plan.h"
#include "tests/catch.h"
#include "tests/kernels/kernels_test_util.h"

using namespace inferscale;
using test::DeviceBuffer;

namespace {

struct Segment {
  int queries, keys;
};

struct Case {
  std::vector<Segment> segments;
  int heads, kv_heads, head_dim;
  int pad = 0;  // extra elements (a multiple of 8) after each head vector and each row
};

std::string describe(const Case& c) {
  std::ostringstream s;
  s << c.heads << "/" << c.kv_heads << " heads, d " << c.head_dim << (c.pad ? ", padded" : "")
    << ", segments (queries x keys)";
  for (const Segment& g : c.segments) s << " " << g.queries << "x" << g.keys;
  return s.str();
}

std::uint16_t nan16(DType dt) {
  return dt == DType::kBF16 ? std::uint16_t(0x7fc0) : std::uint16_t(0x7e00);
}

struct Data {
  std::vector<std::uint16_t> q, k, v, out_poison;
  std::vector<std::int32_t> cu_q, k_start, k_used;
  SplitKvAttentionParams p;  // host pointers into this object
  std::vector<std::uint16_t> ref;
  std::vector<float> weighted_abs;
};

void set(std::vector<std::uint16_t>& x, std::int64_t i, DType dt, float f) {
  x[std::size_t(i)] = dt == DType::kBF16 ? float_to_bf16(f) : float_to_f16(f);
}
float get(const std::vector<std::uint16_t>& x, std::int64_t i, DType dt) {
  return dt == DType::kBF16 ? bf16_to_float(x[std::size_t(i)]) : f16_to_float(x[std::size_t(i)]);
}

Data make_data(const Case& c, DType dt, std::mt19937& rng) {
  Data d;
  const int hd = c.head_dim, gap = 7;
  const std::int64_t head_stride = hd + c.pad;
  const std::int64_t q_token = c.heads * head_stride + c.pad;
  const std::int64_t kv_row = c.kv_heads * head_stride + c.pad;
  int row = 5, tokens = 0, max_q = 0, max_k = 0;
  d.cu_q.push_back(0);
  for (const Segment& g : c.segments) {
    d.k_start.push_back(row);
    d.k_used.push_back(g.keys);
    row += g.keys + gap;
    tokens += g.queries;
    d.cu_q.push_back(tokens);
    max_q = std::max(max_q, g.queries);
    max_k = std::max(max_k, g.keys);
  }
  const int cache_rows = row;
  std::normal_distribution<float> normal;
  const float boost = std::sqrt(6.0f * std::sqrt(float(hd))) / std::sqrt(float(hd));
  d.q.assign(std::size_t(tokens * q_token), nan16(dt));
  d.k.assign(std::size_t(cache_rows * kv_row), nan16(dt));
  d.v = d.k;
  for (int t = 0; t < tokens; ++t) {
    for (int h = 0; h < c.heads; ++h) {
      for (int e = 0; e < hd; ++e)
        set(d.q, t * q_token + h * head_stride + e, dt, normal(rng) + boost);
    }
  }
  for (std::size_t s = 0; s < c.segments.size(); ++s) {
    const Segment& g = c.segments[s];
    for (int j = 0; j < g.keys; ++j) {
      const bool own = j >= g.keys - g.queries;
      for (int h = 0; h < c.kv_heads; ++h) {
        const std::int64_t base = (d.k_start[s] + j) * kv_row + h * head_stride;
        for (int e = 0; e < hd; ++e) {
          set(d.k, base + e, dt, normal(rng) + (own ? boost : 0.0f));
          set(d.v, base + e, dt, normal(rng));
        }
      }
    }
  }
  // Output: a finite poison everywhere (padding must keep it).
  d.out_poison.resize(d.q.size());
  for (std::size_t i = 0; i < d.out_poison.size(); ++i) {
    set(d.out_poison, std::int64_t(i), dt, -12345.0f + float(i % 97));
  }

  SplitKvAttentionParams& p = d.p;
  p.q_token_stride = p.out_token_stride = q_token;
  p.q_head_stride = p.out_head_stride = head_stride;
  p.kv_row_stride = kv_row;
  p.kv_head_stride = head_stride;
  p.segments = std::int32_t(c.segments.size());
  p.tokens = tokens;
  p.heads = c.heads;
  p.kv_heads = c.kv_heads;
  p.head_dim = hd;
  p.max_q = max_q;
  p.max_k = max_k;
  p.scale = 1.0f / std::sqrt(float(hd));
  p.dtype = dt;

  d.ref = d.out_poison;
  d.weighted_abs.assign(std::size_t(tokens) * c.heads * hd, 0.0f);
  SplitKvAttentionParams r = p;
  r.q = d.q.data();
  r.k = d.k.data();
  r.v = d.v.data();
  r.out = d.ref.data();
  r.cu_q = d.cu_q.data();
  r.k_start = d.k_start.data();
  r.k_used = d.k_used.data();
  split_kv_attention_reference(r, d.weighted_abs.data());
  return d;
}

struct Outcome {
  double worst_ratio = 0, max_err = 0, rel_l2 = 0;
  bool finite = true, padding_kept = true;
};

Outcome run_gpu(Data& d, const SplitKvPlan& plan) {
  DeviceBuffer dq(d.q), dk(d.k), dv(d.v), dout(d.out_poison), dcu(d.cu_q), dks(d.k_start),
      dku(d.k_used);
  SplitKvAttentionParams p = d.p;
  p.plan = plan;
  const std::int64_t floats = split_kv_workspace_floats(plan, p.tokens, p.heads, p.head_dim);
  DeviceBuffer dws(std::vector<std::uint8_t>(std::size_t(floats) * 4, 0xff));  // NaN floats
  p.q = dq.get();
  p.k = dk.get();
  p.v = dv.get();
  p.out = dout.get();
  p.cu_q = static_cast<const std::int32_t*>(dcu.get());
  p.k_start = static_cast<const std::int32_t*>(dks.get());
  p.k_used = static_cast<const std::int32_t*>(dku.get());
  p.workspace = floats > 0 ? static_cast<float*>(dws.get()) : nullptr;
  INFERSCALE_CUDA_CHECK(split_kv_attention_launch(p, nullptr));
  test::device_sync();
  const std::vector<std::uint8_t> raw = dout.download();
  std::vector<std::uint16_t> got(d.ref.size());
  std::memcpy(got.data(), raw.data(), raw.size());

  const DType dt = p.dtype;
  const double u = dt == DType::kBF16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
  Outcome o;
  std::vector<bool> is_value(got.size(), false);
  double num = 0, den = 0;
  for (int t = 0; t < p.tokens; ++t) {
    for (int h = 0; h < p.heads; ++h) {
      for (int e = 0; e < p.head_dim; ++e) {
        const std::int64_t i = t * p.out_token_stride + h * p.out_head_stride + e;
        is_value[std::size_t(i)] = true;
        const double x = get(got, i, dt), r = get(d.ref, i, dt);
        const double a = d.weighted_abs[(std::size_t(t) * p.heads + h) * p.head_dim + e];
        if (!std::isfinite(x)) {
          o.finite = false;
          continue;
        }
        const double err = std::abs(x - r);
        const double tol = (2 * u + std::ldexp(1.0, -12)) * a + 2 * u * std::abs(r) + 1e-5;
        o.max_err = std::max(o.max_err, err);
        o.worst_ratio = std::max(o.worst_ratio, err / tol);
        num += err * err;
        den += r * r;
      }
    }
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!is_value[i] && got[i] != d.out_poison[i]) o.padding_kept = false;
  }
  o.rel_l2 = den > 0 ? std::sqrt(num / den) : 0.0;
  return o;
}

std::vector<Case> cases() {
  return {
      // The executor's shapes (Llama-3.1-8B heads): a kv_inject prefill of 32 tokens after
      // 1,264 injected keys, decode steps, and a mixed batch.
      {{{32, 1296}}, 32, 8, 128},
      {{{1, 1297}}, 32, 8, 128},
      {{{1, 1300}, {1, 1350}, {1, 5}, {1, 700}, {1, 1}}, 32, 8, 128},
      {{{32, 1296}, {1, 1310}, {24, 300}}, 32, 8, 128},
      {{{64, 64}}, 32, 8, 128},
      {{{17, 17}, {2, 2}}, 32, 8, 128, 8},
      // Other groupings and head sizes.
      {{{1, 1}}, 8, 8, 64},
      {{{5, 300}, {1, 64}, {1, 65}}, 8, 8, 64},
      {{{64, 4096}}, 8, 8, 64},
      {{{64, 2000}}, 8, 8, 64, 8},
      {{{3, 3}}, 8, 1, 128},
      {{{40, 1000}, {1, 129}}, 8, 1, 128},
      {{{7, 7}, {13, 200}, {1, 64}, {2, 65}}, 12, 4, 64},
      {{{9, 129}, {33, 1100}}, 28, 4, 128, 8},
      {{{1, 4096}, {2, 4000}}, 28, 4, 128},
  };
}

}  // namespace

TEST_CASE("split-KV attention kernel matches its reference over shapes, dtypes and plans") {
  if (!test::cuda_device_available()) INFERSCALE_SKIP("no CUDA device");
  int device = 0, sms = 0;
  INFERSCALE_CUDA_CHECK(cudaGetDevice(&device));
  INFERSCALE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  std::mt19937 rng(17);
  double worst = 0;
  int runs = 0;
  for (const Case& c : cases()) {
    for (DType dt : {DType::kBF16, DType::kF16}) {
      Data d = make_data(c, dt, rng);
      const SplitKvShape shape{d.p.segments, d.p.max_q, d.p.max_k, c.heads, c.kv_heads};
      struct Variant {
        const char* name;
        SplitKvPlan plan;
      };
      const Variant variants[] = {
          {"device plan", split_kv_plan(shape, sms)},
          {"1 warp of rows, every split", split_kv_plan(shape, sms, 1, 1 << 20)},
          {"2 warps of rows, 2 splits", split_kv_plan(shape, sms, 2, 2)},
          {"4 warps of rows, 1 split", split_kv_plan(shape, sms, 4, 1)},
          {"4 warps of rows, 3 splits", split_kv_plan(shape, sms, 4, 3)},
      };
      for (const Variant& v : variants) {
        const Outcome o = run_gpu(d, v.plan);
        ++runs;
        worst = std::max(worst, o.worst_ratio);
        const bool pass = o.finite && o.padding_kept && o.worst_ratio <= 1.0;
        std::printf(
            "%s split-KV %s, %s; %s (warps_m %d, splits %d x %d keys, %s): max |err| %.3e, "
            "rel L2 %.2e, %.2f of tolerance\n",
            pass ? "PASS" : "FAIL", dtype_name(dt), describe(c).c_str(), v.name, v.plan.warps_m,
            v.plan.splits, v.plan.chunk, v.plan.direct() ? "direct" : "combined", o.max_err,
            o.rel_l2, o.worst_ratio);
        CAPTURE(describe(c), dtype_name(dt), v.name, v.plan.warps_m, v.plan.splits, v.plan.chunk,
                o.max_err, o.rel_l2, o.worst_ratio);
        CHECK(o.finite);
        CHECK(o.padding_kept);
        CHECK(o.worst_ratio <= 1.0);
      }
    }
  }
  std::printf("split-KV attention: %d runs, worst error %.2f of tolerance\n", runs, worst);
  std::fflush(stdout);
}

TEST_CASE("split-KV attention refuses what its check rejects, without launching") {
  if (!test::cuda_device_available()) INFERSCALE_SKIP("no CUDA device");
  DeviceBuffer buf(std::size_t(1) << 16);
  SplitKvAttentionParams p;
  p.q = p.k = p.v = buf.get();
  p.out = buf.get();
  p.q_token_stride = p.out_token_stride = 4 * 64;
  p.q_head_stride = p.out_head_stride = 64;
  p.kv_row_stride = 2 * 64;
  p.kv_head_stride = 64;
  p.segments = 1;
  p.tokens = 1;
  p.heads = 4;
  p.kv_heads = 2;
  p.head_dim = 80;  // not a kernel head size
  p.max_q = 1;
  p.max_k = 10;
  p.plan = split_kv_plan({1, 1, 10, 4, 2}, 132, 4, 1);
  CHECK(split_kv_attention_launch(p, nullptr) == cudaErrorInvalidValue);
  CHECK(cudaGetLastError() == cudaSuccess);  // nothing launched, no error left behind
}
