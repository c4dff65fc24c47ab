// GPU: the split-KV attention kernel over a paged context (fact keys read from the pool through a
// block table and rotated on load) against its CPU reference, which equals inject-then-attend
// bit for bit (tests/kernels/paged_kv_reference_test.cpp); and against the kernel itself run
// unpaged on the cache that the copy path builds. Shapes of the executor: Llama-3.1-8B heads
// (32/8, d 128) and 8/2 d 64, 50 facts of 1..33 tokens (blocks out of order), query-only
// prefills of 32 tokens and decode steps, bf16 and fp16, NeoX and GPT-J, pre-RoPE and delta,
// Llama 3.1 scaling, and plans that reach one split, many splits and each warp layout.
//
// Tolerance: that of tests/kernels/split_kv_attention_test.cpp (per element, u the dtype's unit
// roundoff, a = sum_j w_j |v_j| / sum_j w_j): |out - ref| <= (2u + 2^-12) a + 2u |ref| + 1e-5.
// The rotated keys are bit-identical to the injected ones; what differs from the reference is
// the kernel's 16-bit softmax weights (and, against the unpaged kernel, where the 64-key tiles
// fall: a page holds up to 16 keys, so the same keys land in other tiles and splits).
// Cache rows the paged path must not read hold NaN, and so does the workspace.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "kernels/cuda_check.h"
#include "kernels/reference/numeric.h"
#include "kernels/reference/split_kv_attention.h"
#include "kernels/split_kv_attention.cuh"
#include "kernels/split_kv_plan.h"
#include "tests/catch.h"
#include "tests/kernels/kernels_test_util.h"
#include "tests/kernels/paged_kv_case.h"

using namespace inferscale;
using test::DeviceBuffer;
using test::PagedKvCase;

namespace {

std::vector<std::uint8_t> bytes_of(const std::vector<unsigned char>& v) {
  return std::vector<std::uint8_t>(v.begin(), v.end());
}

/// The kernel on the device copies of `b`: paged (through the pages) or unpaged on the copy
/// path's cache. Returns the output bytes.
std::vector<std::uint8_t> run_gpu(const PagedKvCase& c, test::PagedKvBuffers& b, bool paged,
                                  const SplitKvPlan& plan) {
  DeviceBuffer dq(bytes_of(b.q)), dk(bytes_of(paged ? b.cache_k : b.copy_k)),
      dv(bytes_of(paged ? b.cache_v : b.copy_v)), dpk(bytes_of(b.pool_k)), dpv(bytes_of(b.pool_v)),
      dcu(b.cu_q), dks(b.k_start), dku(paged ? b.paged_used : b.copy_used), dps(b.page_start),
      dpages(b.pages), dcos(b.cos), dsin(b.sin);
  const std::size_t out_bytes =
      std::size_t(b.tokens) * c.heads * c.head_dim * std::size_t(dtype_bytes(c.dtype));
  DeviceBuffer dout(std::vector<std::uint8_t>(out_bytes, 0x5a));
  SplitKvAttentionParams p = test::paged_kv_params(c, b, paged, nullptr);
  p.plan = plan;
  const std::int64_t floats = split_kv_workspace_floats(plan, p.tokens, p.heads, p.head_dim);
  DeviceBuffer dws(std::vector<std::uint8_t>(std::size_t(floats) * 4 + 16, 0xff));  // NaN
  p.q = dq.get();
  p.k = dk.get();
  p.v = dv.get();
  p.out = dout.get();
  p.cu_q = static_cast<const std::int32_t*>(dcu.get());
  p.k_start = static_cast<const std::int32_t*>(dks.get());
  p.k_used = static_cast<const std::int32_t*>(dku.get());
  p.workspace = floats > 0 ? static_cast<float*>(dws.get()) : nullptr;
  if (paged) {
    p.paged.pages = static_cast<const PagedKvEntry*>(dpages.get());
    p.paged.page_start = static_cast<const std::int32_t*>(dps.get());
    p.paged.pool.k = dpk.get();
    p.paged.pool.v = dpv.get();
    p.paged.table = {static_cast<const float*>(dcos.get()), static_cast<const float*>(dsin.get()),
                     b.rope_positions};
  }
  REQUIRE(split_kv_attention_check(p).empty());
  INFERSCALE_CUDA_CHECK(split_kv_attention_launch(p, nullptr));
  test::device_sync();
  return dout.download();
}

/// Worst error as a fraction of the tolerance; false in `finite` when any output is not.
double worst_ratio(const PagedKvCase& c, const std::vector<std::uint8_t>& got,
                   const std::vector<unsigned char>& ref, const std::vector<float>& weighted_abs,
                   bool& finite) {
  const double u = c.dtype == DType::kBF16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
  double worst = 0;
  finite = true;
  for (std::size_t i = 0; i < weighted_abs.size(); ++i) {
    const double x = load_elem(got.data(), std::int64_t(i), c.dtype);
    const double r = load_elem(ref.data(), std::int64_t(i), c.dtype);
    if (!std::isfinite(x)) {
      finite = false;
      continue;
    }
    const double tol =
        (2 * u + std::ldexp(1.0, -12)) * weighted_abs[i] + 2 * u * std::abs(r) + 1e-5;
    worst = std::max(worst, std::abs(x - r) / tol);
  }
  return worst;
}

std::vector<PagedKvCase> cases() {
  std::vector<PagedKvCase> out;
  for (int shape = 0; shape < 2; ++shape) {
    PagedKvCase c;
    c.heads = shape == 0 ? 32 : 8;
    c.kv_heads = shape == 0 ? 8 : 2;
    c.head_dim = shape == 0 ? 128 : 64;
    c.fact_tokens.clear();
    std::vector<std::int32_t> prefill = {0}, decode = {0};  // fact 0: the cached header
    c.fact_tokens.push_back(64);
    for (std::int32_t f = 1; f <= 50; ++f) {
      c.fact_tokens.push_back(1 + (f * 13) % 33);
      prefill.push_back(f);
      decode.push_back(51 - f);  // the same facts in another order
    }
    prefill.push_back(-32);  // footer + query, all of it computed now
    decode.push_back(-40);   // its answer so far
    std::vector<std::int32_t> short_one = {0, 7, -3, 9, -2};  // text between facts
    c.segments = {{prefill, 32}, {decode, 1}, {short_one, 1}, {{-5}, 2}};
    out.push_back(c);
  }
  return out;
}

}  // namespace

TEST_CASE("paged split-KV attention matches its reference and the unpaged kernel") {
  if (!test::cuda_device_available()) INFERSCALE_SKIP("no CUDA device");
  int device = 0, sms = 0;
  INFERSCALE_CUDA_CHECK(cudaGetDevice(&device));
  INFERSCALE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  double worst = 0;
  int runs = 0;
  for (PagedKvCase c : cases()) {
    for (DType dt : {DType::kBF16, DType::kF16}) {
      for (RopeStyle style : {RopeStyle::kNeox, RopeStyle::kGptj}) {
        for (bool delta : {false, true}) {
          c.dtype = dt;
          c.style = style;
          c.delta = delta;
          c.seed = 11 + std::uint64_t(runs);
          test::PagedKvBuffers b = test::make_paged_kv(c);
          const std::size_t n = std::size_t(b.tokens) * c.heads * c.head_dim;
          std::vector<unsigned char> ref(n * std::size_t(dtype_bytes(dt)));
          std::vector<float> weighted_abs(n);
          split_kv_attention_reference(test::paged_kv_params(c, b, true, ref.data()),
                                       weighted_abs.data());
          const SplitKvShape shape{std::int32_t(c.segments.size()), b.max_q, b.paged_max_k, c.heads,
                                   c.kv_heads};
          const SplitKvShape copy_shape{std::int32_t(c.segments.size()), b.max_q, b.copy_max_k,
                                        c.heads, c.kv_heads};
          struct Variant {
            const char* name;
            SplitKvPlan plan;
          };
          const Variant variants[] = {
              {"device plan", split_kv_plan(shape, sms)},
              {"1 warp of rows, every split", split_kv_plan(shape, sms, 1, 1 << 20)},
              {"2 warps of rows, 2 splits", split_kv_plan(shape, sms, 2, 2)},
              {"4 warps of rows, 1 split", split_kv_plan(shape, sms, 4, 1)},
          };
          const std::vector<std::uint8_t> unpaged =
              run_gpu(c, b, false, split_kv_plan(copy_shape, sms));
          for (const Variant& v : variants) {
            const std::vector<std::uint8_t> got = run_gpu(c, b, true, v.plan);
            bool finite_ref = true, finite_copy = true;
            const double r_ref = worst_ratio(c, got, ref, weighted_abs, finite_ref);
            // The unpaged kernel on the copy path's cache, measured against the same reference.
            const double r_copy = worst_ratio(c, unpaged, ref, weighted_abs, finite_copy);
            ++runs;
            worst = std::max(worst, r_ref);
            std::printf(
                "%s paged split-KV %s %s %s, %d/%d heads d %d, %s: %.2f of tolerance "
                "(unpaged kernel on the copy cache: %.2f)\n",
                finite_ref && r_ref <= 1.0 ? "PASS" : "FAIL", dtype_name(dt),
                rope_style_name(style), delta ? "delta" : "pre_rope", c.heads, c.kv_heads,
                c.head_dim, v.name, r_ref, r_copy);
            CAPTURE(dtype_name(dt), rope_style_name(style), delta, c.heads, c.head_dim, v.name,
                    r_ref, r_copy);
            CHECK(finite_ref);
            CHECK(finite_copy);
            CHECK(r_ref <= 1.0);
            CHECK(r_copy <= 1.0);
          }
        }
      }
    }
  }
  std::printf("paged split-KV attention: %d runs, worst error %.2f of tolerance\n", runs, worst);
  std::fflush(stdout);
}

TEST_CASE("paged split-KV attention: a page one position off is outside the tolerance") {
  // The comparison above can fail: rotating the fact keys one position off moves the output.
  if (!test::cuda_device_available()) INFERSCALE_SKIP("no CUDA device");
  PagedKvCase c = cases().front();
  c.dtype = DType::kBF16;
  test::PagedKvBuffers b = test::make_paged_kv(c);
  const std::size_t n = std::size_t(b.tokens) * c.heads * c.head_dim;
  std::vector<unsigned char> ref(n * 2);
  std::vector<float> weighted_abs(n);
  split_kv_attention_reference(test::paged_kv_params(c, b, true, ref.data()), weighted_abs.data());
  for (PagedKvEntry& e : b.pages) {
    if (e.kind == PagedKvKind::kPoolPreRope) e.position += 1;
  }
  const SplitKvShape shape{std::int32_t(c.segments.size()), b.max_q, b.paged_max_k, c.heads,
                           c.kv_heads};
  int device = 0, sms = 0;
  INFERSCALE_CUDA_CHECK(cudaGetDevice(&device));
  INFERSCALE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  bool finite = true;
  const double r =
      worst_ratio(c, run_gpu(c, b, true, split_kv_plan(shape, sms)), ref, weighted_abs, finite);
  CHECK(r > 1.0);
}
