// The cost model's step pricing equals the plain per-item count and price it replaced, bit for
// bit: decodes summed as integers, phases of no work and zero-byte transfers priced without a
// division, on random plans and at the edges (sums past 2^53, zero and infinite rates).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "executor/cost_model/cost_model.h"
#include "tests/catch.h"
#include "tests/executor/model_shapes.h"

using namespace inferscale;
using test_shapes::llama_8b;

namespace {

CostRates h200_rates() {
  GpuConfig g = test_shapes::h200();
  g.per_seq_overhead_us = 20;
  return CostRates::from_gpu(g);
}

/// The count as it was: every item walked, in plan order.
StepWork reference_work(const ModelConfig& model, const BatchPlan& plan) {
  StepWork w;
  const double kv_bytes = double(model.kv_bytes_per_token());
  const double layer_flops = model.layer_flops_per_token();
  const double head_flops = model.lm_head_flops();
  double samples = 0;
  for (const auto& p : plan.prefills) {
    const double n = p.computed_now, past = p.present_tokens;
    w.prefill_tokens += n;
    w.attention_flops += model.attention_flops(n, past);
    w.hbm_bytes += (past + n) * kv_bytes;
    if (p.last_chunk) samples += 1;
    if (p.first_chunk) {
      for (auto i = p.facts_begin; i < p.facts_end; ++i) {
        const auto& f = plan.prompt_facts[i];
        if (f.inject) w.inject_bytes += 2.0 * f.tokens * kv_bytes;
      }
    }
  }
  for (const auto& d : plan.decodes) {
    w.decode_tokens += 1;
    w.attention_flops += model.attention_flops(1, d.context_tokens);
    w.hbm_bytes += (double(d.context_tokens) + 1) * kv_bytes;
    samples += 1;
  }
  for (const auto& e : plan.encodes) {
    const double n = double(e.tokens) + e.context_tokens;
    w.encode_tokens += n;
    w.attention_flops += model.attention_flops(n, 0);
    w.hbm_bytes += e.tokens * kv_bytes;
    w.encodes += 1;
  }
  for (const auto& l : plan.loads) w.pcie_bytes += double(l.bytes);
  for (const auto& o : plan.offloads) w.pcie_bytes += double(o.bytes);
  w.transfers = double(plan.loads.size() + plan.offloads.size());
  const double tokens = w.prefill_tokens + w.decode_tokens + w.encode_tokens;
  w.gemm_flops = tokens * layer_flops + samples * head_flops;
  if (tokens > 0) w.hbm_bytes += double(model.weight_bytes());
  w.sequences = double(plan.prefills.size() + plan.decodes.size());
  return w;
}

/// The price as it was: every phase divided out.
BatchResult reference_price(const CostRates& rates, const StepWork& w) {
  BatchResult r;
  const double gemm_ns = w.gemm_flops / rates.gemm_flops_per_s * 1e9;
  const double attn_ns = w.attention_flops / rates.attention_flops_per_s * 1e9;
  const double mem_ns = w.hbm_bytes / rates.hbm_bytes_per_s * 1e9;
  const double forward_ns = std::max(gemm_ns + attn_ns, mem_ns);
  const double inject_ns = w.inject_bytes / rates.hbm_bytes_per_s * 1e9;
  const double pcie_ns = w.pcie_bytes / rates.pcie_bytes_per_s * 1e9;
  const bool idle = forward_ns == 0 && inject_ns == 0 && pcie_ns == 0;
  const double overhead_ns = idle ? 0
                                  : rates.step_overhead_ns +
                                        w.sequences * rates.per_seq_overhead_ns +
                                        w.encodes * rates.per_encode_overhead_ns;
  const double tokens = w.prefill_tokens + w.decode_tokens + w.encode_tokens;
  auto share = [&](double t) { return tokens > 0 ? forward_ns * t / tokens : 0.0; };
  // Prices saturate at 2^60 ns (NaN: 0), never wrap.
  auto round = [](double x) -> SimTime {
    constexpr SimTime kMax = SimTime{1} << 60;
    if (std::isnan(x)) return 0;
    if (x >= 0x1p60) return kMax;
    if (x <= -0x1p60) return -kMax;
    return std::clamp(static_cast<SimTime>(std::llround(x)), -kMax, kMax);
  };
  r.phases.prefill_ns = round(share(w.prefill_tokens));
  r.phases.decode_ns = round(share(w.decode_tokens));
  r.phases.encode_ns = round(share(w.encode_tokens));
  r.phases.inject_ns = round(inject_ns);
  r.phases.load_ns = round(pcie_ns);
  r.phases.overhead_ns = round(overhead_ns);
  r.duration_ns = round(forward_ns + inject_ns + pcie_ns + overhead_ns);
  return r;
}

bool same_bits(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

void check_same(const StepWork& a, const StepWork& b) {
  CHECK(same_bits(a.gemm_flops, b.gemm_flops));
  CHECK(same_bits(a.attention_flops, b.attention_flops));
  CHECK(same_bits(a.hbm_bytes, b.hbm_bytes));
  CHECK(same_bits(a.inject_bytes, b.inject_bytes));
  CHECK(same_bits(a.pcie_bytes, b.pcie_bytes));
  CHECK(same_bits(a.sequences, b.sequences));
  CHECK(same_bits(a.encodes, b.encodes));
  CHECK(same_bits(a.transfers, b.transfers));
  CHECK(same_bits(a.prefill_tokens, b.prefill_tokens));
  CHECK(same_bits(a.decode_tokens, b.decode_tokens));
  CHECK(same_bits(a.encode_tokens, b.encode_tokens));
}

void check_same(const BatchResult& a, const BatchResult& b) {
  CHECK(a.duration_ns == b.duration_ns);
  CHECK(a.phases.prefill_ns == b.phases.prefill_ns);
  CHECK(a.phases.decode_ns == b.phases.decode_ns);
  CHECK(a.phases.encode_ns == b.phases.encode_ns);
  CHECK(a.phases.inject_ns == b.phases.inject_ns);
  CHECK(a.phases.load_ns == b.phases.load_ns);
  CHECK(a.phases.overhead_ns == b.phases.overhead_ns);
}

/// A random plan: each kind of item present or not, decodes from none to many.
BatchPlan random_plan(std::mt19937_64& rng, std::uint32_t max_context) {
  BatchPlan plan;
  auto pick = [&](std::uint64_t n) { return std::uint32_t(rng() % n); };
  const bool decode_only = pick(3) == 0;
  const std::uint32_t decodes = pick(4) == 0 ? pick(300) : pick(4);
  for (std::uint32_t i = 0; i < decodes; ++i) {
    plan.decodes.push_back(DecodeItem{i, pick(max_context)});
  }
  if (decode_only) return plan;
  for (std::uint32_t i = pick(4); i > 0; --i) {
    PrefillItem p;
    p.computed_now = pick(4096);
    p.present_tokens = pick(max_context);
    p.first_chunk = pick(2) == 0;
    p.last_chunk = pick(2) == 0;
    p.facts_begin = std::uint32_t(plan.prompt_facts.size());
    for (std::uint32_t f = pick(60); f > 0; --f) {
      plan.prompt_facts.push_back(PromptFact{f, pick(64) + 1, 0, pick(4) != 0, false});
    }
    p.facts_end = std::uint32_t(plan.prompt_facts.size());
    plan.prefills.push_back(p);
  }
  for (std::uint32_t i = pick(3) == 0 ? pick(8) : 0; i > 0; --i) {
    plan.encodes.push_back(FactEncode{i, 0, pick(64) + 1, pick(512), true});
  }
  for (std::uint32_t i = pick(3) == 0 ? pick(5) : 0; i > 0; --i) {
    plan.loads.push_back(FactLoad{i, 16, std::uint64_t(pick(64) + 1) << 17});
  }
  for (std::uint32_t i = pick(4) == 0 ? pick(5) : 0; i > 0; --i) {
    plan.offloads.push_back(FactLoad{i, 16, std::uint64_t(pick(64) + 1) << 17});
  }
  return plan;
}

void check_plans(const ModelConfig& model, const CostRates& rates, std::uint32_t max_context,
                 int plans) {
  const CostModel cost(model, rates);
  std::mt19937_64 rng(7);
  for (int i = 0; i < plans; ++i) {
    INFO("plan " << i);
    const BatchPlan plan = random_plan(rng, max_context);
    const StepWork w = cost.work(plan);
    check_same(w, reference_work(model, plan));
    check_same(cost.price(w), reference_price(rates, w));
  }
}

}  // namespace

TEST_CASE("cost model: a step's count and price are the per-item ones, bit for bit") {
  const ModelConfig m = llama_8b();
  SECTION("random plans") {
    check_plans(m, h200_rates(), 200000, 3000);
  }
  SECTION("empty plan") {
    const CostModel cost(m, h200_rates());
    check_same(cost.work(BatchPlan{}), reference_work(m, BatchPlan{}));
    check_same(cost.price(StepWork{}), reference_price(h200_rates(), StepWork{}));
  }
  SECTION("sums past 2^53 fall back to the per-item loop") {
    ModelConfig big = m;
    big.layers = 1u << 14;
    big.heads = 1u << 10;
    BatchPlan plan;
    for (std::uint32_t i = 0; i < 64; ++i) plan.decodes.push_back(DecodeItem{i, 4000000000u - i});
    REQUIRE(reference_work(big, plan).attention_flops > 0x1p53);
    check_same(CostModel(big, h200_rates()).work(plan), reference_work(big, plan));
    check_plans(big, h200_rates(), 4000000000u, 300);
  }
  SECTION("inject sums past 2^53 fall back to the per-fact loop") {
    ModelConfig wide = m;
    wide.layers = 1;
    wide.head_dim = 1;
    wide.dtype_bytes = 1;
    wide.kv_heads = (1u << 31) - 1;  // odd: the terms' low bits survive, the sums round
    BatchPlan plan;
    PrefillItem p;
    p.computed_now = 16;
    p.first_chunk = true;
    for (std::uint32_t i = 0; i < 8; ++i) {
      plan.prompt_facts.push_back(PromptFact{i, 3000001 + 3 * i, 0, true, false});
    }
    p.facts_end = 8;
    plan.prefills.push_back(p);
    const StepWork ref = reference_work(wide, plan);
    REQUIRE(ref.inject_bytes > 0x1p53);
    // One product of the summed tokens rounds otherwise than the per-fact sum here.
    REQUIRE(ref.inject_bytes != 2.0 * (8 * 3000001.0 + 84) * double(wide.kv_bytes_per_token()));
    check_same(CostModel(wide, h200_rates()).work(plan), ref);
    // The encodes' KV bytes likewise.
    BatchPlan encodes;
    double stored_tokens = 0;
    for (std::uint32_t i = 0; i < 8; ++i) {
      encodes.encodes.push_back(FactEncode{i, 0, 3000001 + 3 * i, 100, true});
      stored_tokens += 3000001 + 3 * i;
    }
    const StepWork encode_ref = reference_work(wide, encodes);
    REQUIRE(encode_ref.hbm_bytes > 0x1p53);
    REQUIRE(encode_ref.hbm_bytes !=
            stored_tokens * double(wide.kv_bytes_per_token()) + double(wide.weight_bytes()));
    check_same(CostModel(wide, h200_rates()).work(encodes), encode_ref);
    check_plans(wide, h200_rates(), 200000, 300);
  }
  SECTION("encodes of more than 2^26 tokens fall back to the per-encode loop") {
    ModelConfig tiny = m;
    tiny.layers = 1;
    tiny.heads = 1;
    tiny.head_dim = 1;
    tiny.kv_heads = 1;
    BatchPlan plan;
    plan.encodes.push_back(FactEncode{1, 0, 1u << 26, 0, true});
    plan.encodes.push_back(FactEncode{2, 0, 3, 1u << 27, true});
    check_same(CostModel(tiny, h200_rates()).work(plan), reference_work(tiny, plan));
  }
  SECTION("zero and infinite rates") {
    CostRates zero = h200_rates();
    zero.pcie_bytes_per_s = 0;
    zero.hbm_bytes_per_s = 0;
    check_plans(m, zero, 200000, 300);
    CostRates inf = h200_rates();
    inf.pcie_bytes_per_s = std::numeric_limits<double>::infinity();
    inf.gemm_flops_per_s = 1e-300;  // forward time overflows to infinity
    check_plans(m, inf, 200000, 300);
  }
}

TEST_CASE("cost model: price_decodes gives what execute gives each decode-only plan") {
  const ModelConfig m = llama_8b();
  CostRates zero = h200_rates();
  zero.pcie_bytes_per_s = 0;
  zero.hbm_bytes_per_s = 0;
  CostRates inf = h200_rates();
  inf.gemm_flops_per_s = 1e-300;
  CostRates curved = h200_rates();  // decode steps of 1 to 256 rows, all on the curve
  curved.gemm_curve = {{16, 0.2}, {128, 0.55}, {2048, 1.0}};
  curved.decode_kv_curve = {{1, 0.25}, {2, 1.0}, {128, 1.1}};
  ModelConfig big = m;
  big.layers = 1u << 14;
  big.heads = 1u << 10;
  std::mt19937_64 rng(11);
  int priced = 0, refused = 0;
  for (const auto& [model, rates] :
       {std::pair{m, h200_rates()}, std::pair{m, zero}, std::pair{m, inf},
        std::pair{big, h200_rates()}, std::pair{m, curved}}) {
    CostModelExecutor ex{CostModel(model, rates)};
    for (int i = 0; i < 300; ++i) {
      const auto decodes = std::uint32_t(1 + rng() % (i % 3 == 0 ? 256 : 4));
      // One plan; each later one has every context one token longer (the next decode step).
      BatchPlan plan;
      std::uint64_t contexts = 0;
      for (std::uint32_t d = 0; d < decodes; ++d) {
        plan.decodes.push_back(DecodeItem{d, std::uint32_t(rng() % 200000)});
        contexts += plan.decodes.back().context_tokens;
      }
      plan.released = {7};  // freed KV: no work
      std::vector<SimTime> durations(1 + rng() % 20, -1);
      if (!ex.price_decodes(decodes, contexts, durations)) {
        // Only where work() would sum item by item.
        CHECK(model.layers == big.layers);
        ++refused;
        continue;
      }
      for (const SimTime d : durations) {
        CHECK(d == ex.execute(plan).duration_ns);
        for (auto& item : plan.decodes) ++item.context_tokens;
      }
      ++priced;
    }
  }
  CHECK(priced > 1200);
  CHECK(refused > 0);
}

TEST_CASE("cost model: the mfu curve slows small matrix products and only those") {
  GpuConfig g;
  g.mfu_curve = {{128, 0.5}, {2048, 1.0}};
  CHECK(g.mfu_factor(1) == 0.5);  // before the first point: its factor
  CHECK(g.mfu_factor(128) == 0.5);
  CHECK(g.mfu_factor(512) == Approx(0.75));  // log2: halfway from 2^7 to 2^11
  CHECK(g.mfu_factor(2048) == 1.0);
  CHECK(g.mfu_factor(1e6) == 1.0);
  CHECK(GpuConfig{}.mfu_factor(64) == 1.0);  // no curve

  const ModelConfig m = llama_8b();
  const CostRates flat = h200_rates();
  CostRates curved = flat;
  curved.gemm_curve = g.mfu_curve;
  const auto prefill = [](std::uint32_t tokens) {
    BatchPlan plan;
    PrefillItem p;
    p.query_tokens = p.prompt_tokens = p.computed_total = p.computed_now = tokens;
    p.first_chunk = p.last_chunk = true;
    plan.prefills.push_back(p);
    return plan;
  };
  const CostModel a(m, flat), b(m, curved);
  for (const std::uint32_t tokens : {2048u, 4096u, 8192u}) {  // at and past the plateau
    CHECK(a.price(a.work(prefill(tokens))).duration_ns ==
          b.price(b.work(prefill(tokens))).duration_ns);
  }
  // 512 tokens: compute-bound on an H200 (gemm ~7 TFLOP against 16 GB of weights); the curve's
  // 0.75 makes the matrix products 4/3 as long.
  const StepWork w = a.work(prefill(512));
  const double gemm_flat = w.gemm_flops / flat.gemm_flops_per_s * 1e9;
  const SimTime t_flat = a.price(w).duration_ns, t_curved = b.price(w).duration_ns;
  CHECK(double(t_curved - t_flat) == Approx(gemm_flat / 3).epsilon(1e-6));
}

TEST_CASE("cost model: the attention mbu curve prices decode KV reads and nothing else") {
  GpuConfig g;
  g.attention_mbu_curve = {{1, 0.25}, {4, 1.0}};
  CHECK(g.attention_mbu_factor(1) == 0.25);
  CHECK(g.attention_mbu_factor(2) == Approx(0.625));  // log2: halfway from 2^0 to 2^2
  CHECK(g.attention_mbu_factor(64) == 1.0);
  CHECK(GpuConfig{}.attention_mbu_factor(1) == 1.0);

  const ModelConfig m = llama_8b();
  const CostRates flat = h200_rates();
  CostRates curved = flat;
  curved.decode_kv_curve = g.attention_mbu_curve;
  const CostModel a(m, flat), b(m, curved);
  const auto decodes = [](std::uint32_t n, std::uint32_t context) {
    BatchPlan plan;
    for (std::uint32_t d = 0; d < n; ++d) plan.decodes.push_back(DecodeItem{d, context});
    return plan;
  };
  // One decode of 4,095 tokens of context: its KV (4,096 tokens x 128 KiB) read at a quarter
  // of the rate, so three times its flat read time longer; the weights' read unchanged.
  const StepWork w = a.work(decodes(1, 4095));
  CHECK(w.decode_kv_bytes == 4096.0 * double(m.kv_bytes_per_token()));
  const double kv_flat = w.decode_kv_bytes / flat.hbm_bytes_per_s * 1e9;
  CHECK(double(b.price(w).duration_ns - a.price(w).duration_ns) ==
        Approx(3 * kv_flat).epsilon(1e-6));
  // At and past the curve's factor 1: the flat price, to rounding (the KV read is then a
  // term of its own).
  for (const std::uint32_t n : {4u, 32u}) {
    const StepWork wn = a.work(decodes(n, 1000));
    CHECK(std::llabs(a.price(wn).duration_ns - b.price(wn).duration_ns) <= 1);
  }
  // A prefill alone reads no decode KV: the curve leaves it alone.
  BatchPlan prefill;
  PrefillItem p;
  p.query_tokens = p.prompt_tokens = p.computed_total = p.computed_now = 64;
  p.first_chunk = p.last_chunk = true;
  prefill.prefills.push_back(p);
  CHECK(a.work(prefill).decode_kv_bytes == 0);
  CHECK(a.price(a.work(prefill)).duration_ns == b.price(b.work(prefill)).duration_ns);
}

TEST_CASE("cost model: an injection reads fact KV in its stored format, writes the model's") {
  const ModelConfig m = llama_8b();
  BatchPlan plan;
  PrefillItem p;
  p.computed_now = 16;
  p.first_chunk = true;
  plan.prompt_facts.push_back(PromptFact{0, 19, 0, true, false});
  plan.prompt_facts.push_back(PromptFact{1, 30, 0, true, false});
  plan.prompt_facts.push_back(PromptFact{2, 7, 0, false, false});  // inlined as text: no copy
  p.facts_end = 3;
  plan.prefills.push_back(p);
  const double kv = double(m.kv_bytes_per_token());
  CostModel model(m, h200_rates());
  CHECK(model.work(plan).inject_bytes == 49 * 2 * kv);
  // fp8 fact KV: a byte a value plus an fp32 scale per head vector.
  const double fp8 = 2.0 * m.layers * m.kv_heads * (m.head_dim + 4);
  model.set_fact_kv_bytes(fp8);
  const StepWork w = model.work(plan);
  CHECK(w.inject_bytes == 49 * (fp8 + kv));
  CHECK(w.inject_bytes < 49 * 2 * kv);
  // Only the injection moves: the prefill's own KV reads and writes stay the model's.
  CHECK(w.hbm_bytes == CostModel(m, h200_rates()).work(plan).hbm_bytes);
}

TEST_CASE("cost model: a step too long to price saturates at 2^60 ns instead of wrapping") {
  const CostModel model(llama_8b(), h200_rates());
  constexpr SimTime kMax = SimTime{1} << 60;
  // An encode of 2^32 - 1 tokens: its price does not fit in 64 bits (INT64_MIN before).
  BatchPlan plan;
  plan.encodes.push_back(FactEncode{0, 0, 0xffffffffu, 0xffffffffu, true});
  const BatchResult r = model.price(model.work(plan));
  CHECK(r.duration_ns == kMax);
  CHECK(r.phases.encode_ns == kMax);
  CHECK(model.encode_cost_ns(0xffffffffu, 0xffffffffu) == kMax);
  CHECK(model.encode_cost_ns(0xffffffffu, 0) == kMax);
  // A long but representable step keeps its exact price.
  CHECK(model.encode_cost_ns(100000, 0) > 0);
  CHECK(model.encode_cost_ns(100000, 0) < kMax);
}

TEST_CASE("cost model: fp8 weights halve the weight bytes and multiply at the fp8 peak") {
  ModelConfig m;
  m.layers = 4, m.hidden = 256, m.heads = 4, m.kv_heads = 2, m.head_dim = 64, m.ffn = 512;
  m.vocab = 1000;
  ModelConfig f = m;
  f.weight_bytes_per_param = 1;
  CHECK(f.weight_bytes() * 2 == m.weight_bytes());
  CHECK(f.kv_bytes_per_token() == m.kv_bytes_per_token());  // KV stays in the model's dtype
  GpuConfig g;
  g.bf16_tflops = 100, g.fp8_tflops = 200, g.mfu = 0.5, g.hbm_gbps = 1000, g.pcie_gbps = 10;
  CHECK(CostRates::from_gpu(g, true).gemm_flops_per_s ==
        2 * CostRates::from_gpu(g).gemm_flops_per_s);
  g.fp8_tflops = 0;  // no fp8 tensor cores: the bf16 rate
  CHECK(CostRates::from_gpu(g, true).gemm_flops_per_s == CostRates::from_gpu(g).gemm_flops_per_s);
}
