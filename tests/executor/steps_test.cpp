// The executor over sequences of plans: chunked prefill, decode, mixed inline and injected
// facts, per-request (not admitted) facts, the host tier, and plans it must refuse.
#include <ATen/ATen.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "executor/copy_order.h"
#include "executor/gpu/gpu_executor.h"
#include "tests/catch.h"
#include "tests/executor/executor_test_util.h"

using namespace inferscale;
using namespace inferscale::test;

namespace {

std::int32_t top_token(const at::Tensor& logits) {
  return std::int32_t(logits.argmax().item<std::int64_t>());
}

/// An encode of `p`'s i-th fact for `p`'s request only (store=false), at its composed position.
FactEncode private_encode(const PromptSpec& p, std::size_t i, std::uint32_t context_tokens) {
  FactEncode e;
  e.fact = p.facts[i].id;
  e.tokens = p.facts[i].tokens;
  e.context_tokens = context_tokens;
  e.store = false;
  e.for_request = p.request;
  e.position = p.fact_position(i);
  return e;
}

/// The message of the std::invalid_argument that refuses `plan` ("" when it is performed).
std::string refusal(GpuExecutor& ex, const BatchPlan& plan) {
  try {
    ex.execute(plan);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

/// The logits of a fresh executor that encodes `p`'s facts (context w) and prefills `p` in one
/// step: what a run that moved the same KV around must reproduce.
at::Tensor reference_logits(const GpuExecutorOptions& o, const PromptSpec& p, std::uint32_t w) {
  GpuExecutor ref(o);
  encode_facts(ref, {p}, w);
  BatchPlan direct;
  add_prefill(direct, p, 0, p.computed_total());
  ref.execute(direct);
  return ref.last_logits().clone();
}

}  // namespace

TEST_CASE("chunked text prefill equals one chunk and decode continues greedily") {
  PromptSpec p;
  p.facts = {{11, 6, false}, {12, 9, false}};
  GpuExecutor one(cpu_options()), chunked(cpu_options());
  BatchPlan whole;
  add_prefill(whole, p, 0, p.computed_total());
  const BatchResult r1 = one.execute(whole);
  const at::Tensor l1 = one.last_logits().clone();

  std::uint32_t done = 0;
  BatchResult r2;
  for (std::uint32_t now : {5u, 7u, p.computed_total() - 12}) {
    BatchPlan plan;
    add_prefill(plan, p, done, now);
    r2 = chunked.execute(plan);
    done += now;
    CHECK(r2.tokens.size() == (done == p.computed_total() ? 1u : 0u));
  }
  REQUIRE(r1.tokens.size() == 1);
  CHECK(r2.tokens == r1.tokens);
  CHECK(max_rel_diff(chunked.last_logits(), l1) < 1e-5);

  // Six decode steps (past the 4 reserved rows: the request's range grows) against a native
  // prefill of the prompt plus the generated tokens.
  SyntheticTokenSource src(tiny_model().vocab, 5);
  std::vector<std::int32_t> seq = p.all_tokens(src);
  seq.push_back(r1.tokens[0]);
  for (int step = 0; step < 6; ++step) {
    const BatchResult d1 = one.execute(decode_plan(p.request, std::uint32_t(seq.size())));
    const BatchResult d2 = chunked.execute(decode_plan(p.request, std::uint32_t(seq.size())));
    REQUIRE(d1.tokens.size() == 1);
    CHECK(d1.tokens == d2.tokens);
    const at::Tensor native = one.prefill_logits(seq);
    CHECK(max_rel_diff(one.last_logits().select(0, 0), native) < 1e-5);
    CHECK(d1.tokens[0] == top_token(native));
    seq.push_back(d1.tokens[0]);
  }
  BatchPlan release;
  release.released.push_back(p.request);
  one.execute(release);
  CHECK_THROWS_AS(one.execute(decode_plan(p.request, 1)), std::invalid_argument);
}

TEST_CASE(
    "warming the products of row counts and padding larger passes leave the steps "
    "bit-identical") {
  PromptSpec p;
  p.facts = {{11, 6, false}, {12, 9, false}};
  const auto [plain_options, warm_options] = plain_and_padded(cpu_options(), 64, 12, 16);
  GpuExecutor plain(plain_options), warm(warm_options);
  plain.warm_up();
  warm.warm_up();
  const GemmCounts before = warm.ops().gemm_counts();
  // Five products for each count 1..12, the four layer products for 16, 32, 48 and 64.
  CHECK(before.blas == plain.ops().gemm_counts().blas + 5 * 12 + 4 * 4);
  REQUIRE(p.computed_total() > 12);  // the prefill is padded to a multiple of 16 rows
  BatchPlan whole;
  add_prefill(whole, p, 0, p.computed_total());
  const BatchResult a = plain.execute(whole), b = warm.execute(whole);
  REQUIRE(a.tokens.size() == 1);
  CHECK(a.tokens == b.tokens);
  CHECK(at::equal(plain.last_logits(), warm.last_logits()));
  const BatchResult da = plain.execute(decode_plan(p.request, p.prompt_tokens() + 1));
  const BatchResult db = warm.execute(decode_plan(p.request, p.prompt_tokens() + 1));
  CHECK(da.tokens == db.tokens);
  CHECK(at::equal(plain.last_logits(), warm.last_logits()));
}

TEST_CASE("settling the device before the first prefill step leaves the steps bit-identical") {
  PromptSpec p;
  p.facts = {{31, 6, false}, {32, 9, false}};
  GpuExecutorOptions settle_options = cpu_options();
  settle_options.settle_ms = 1;
  GpuExecutor plain(cpu_options()), settled(settle_options);
  auto products = [](GpuExecutor& e) { return e.ops().gemm_counts().blas; };
  BatchPlan whole;
  add_prefill(whole, p, 0, p.computed_total());
  const std::uint64_t p0 = products(plain), s0 = products(settled);
  const BatchResult a = plain.execute(whole), b = settled.execute(whole);
  const std::uint64_t p1 = products(plain), s1 = products(settled);
  CHECK(s1 - s0 >= p1 - p0 + 5);  // at least one pass of five products before the step
  CHECK(a.tokens == b.tokens);
  CHECK(at::equal(plain.last_logits(), settled.last_logits()));
  // Only before the first prefill step.
  const BatchResult da = plain.execute(decode_plan(p.request, p.prompt_tokens() + 1));
  const BatchResult db = settled.execute(decode_plan(p.request, p.prompt_tokens() + 1));
  CHECK(products(settled) - s1 == products(plain) - p1);
  CHECK(da.tokens == db.tokens);
  CHECK(at::equal(plain.last_logits(), settled.last_logits()));
}

TEST_CASE("later chunks may name no facts: the layout of the first chunk holds") {
  // The simulator lists a prompt's facts on its first chunk only.
  PromptSpec p;
  p.facts = {{21, 6, false}, {22, 9, false}, {23, 5, false}};
  GpuExecutor one(cpu_options()), chunked(cpu_options());
  BatchPlan whole;
  add_prefill(whole, p, 0, p.computed_total());
  const BatchResult r1 = one.execute(whole);
  std::uint32_t done = 0;
  BatchResult r2;
  for (std::uint32_t now : {7u, 9u, p.computed_total() - 16}) {
    BatchPlan plan;
    add_prefill(plan, p, done, now);
    if (done > 0) {
      plan.prompt_facts.clear();
      plan.prefills.back().facts_begin = plan.prefills.back().facts_end = 0;
    }
    r2 = chunked.execute(plan);
    done += now;
  }
  REQUIRE(r1.tokens.size() == 1);
  CHECK(r2.tokens == r1.tokens);
  CHECK(max_rel_diff(chunked.last_logits(), one.last_logits()) < 1e-5);

  // A later chunk whose prompt length differs from its first chunk's is refused.
  PromptSpec q = p;
  q.request = 2;
  BatchPlan first;
  add_prefill(first, q, 0, 4);
  chunked.execute(first);
  BatchPlan bad;
  add_prefill(bad, q, 4, 4);
  bad.prompt_facts.clear();
  bad.prefills.back().facts_begin = bad.prefills.back().facts_end = 0;
  bad.prefills.back().prompt_tokens += 1;
  CHECK_THROWS_AS(chunked.execute(bad), std::invalid_argument);
}

TEST_CASE("one step batches prefills of different lengths with decodes") {
  PromptSpec a, b;
  a.request = 1;
  a.facts = {{21, 5}, {22, 6, false}, {23, 4}};
  a.header_cached = true;
  b.request = 2;
  b.query = 11;
  b.facts = {{31, 8}};
  b.header_cached = true;
  // Alone, each in its own executor.
  auto alone = [](const PromptSpec& p, std::uint32_t first_chunk) {
    GpuExecutor ex(cpu_options());
    encode_facts(ex, {p}, 3);
    BatchPlan c1;
    add_prefill(c1, p, 0, first_chunk);
    ex.execute(c1);
    if (first_chunk < p.computed_total()) {
      BatchPlan c2;
      add_prefill(c2, p, first_chunk, p.computed_total() - first_chunk);
      ex.execute(c2);
    }
    return ex.last_logits().select(0, 0).clone();
  };
  const at::Tensor la = alone(a, 3), lb = alone(b, b.computed_total());
  // Together: a's first chunk ends inside its inline fact; b runs in one chunk; then a's
  // second chunk and b's first decode share a step.
  GpuExecutor ex(cpu_options());
  encode_facts(ex, {a}, 3);
  encode_facts(ex, {b}, 3);
  BatchPlan s1;
  add_prefill(s1, a, 0, 3);
  add_prefill(s1, b, 0, b.computed_total());
  const BatchResult r1 = ex.execute(s1);
  REQUIRE(r1.tokens.size() == 1);
  CHECK(max_rel_diff(ex.last_logits().select(0, 0), lb) < 1e-5);
  BatchPlan s2;
  add_prefill(s2, a, 3, a.computed_total() - 3);
  s2.decodes.push_back(DecodeItem{b.request, b.prompt_tokens()});
  const BatchResult r2 = ex.execute(s2);
  REQUIRE(r2.tokens.size() == 2);
  CHECK(max_rel_diff(ex.last_logits().select(0, 0), la) < 1e-5);
  CHECK(ex.last_stats().computed_tokens == a.computed_total() - 3 + 1);
}

TEST_CASE("not-admitted facts go to the request only and offloaded facts come back intact") {
  PromptSpec p;
  p.facts = {{41, 5}, {42, 7}};
  p.header_cached = true;
  const at::Tensor expect = reference_logits(cpu_options(), p, 3).select(0, 0);

  // Fact 41 encoded for the request only (store=false, private KV); fact 42 resident.
  GpuExecutor ex(cpu_options());
  BatchPlan enc;
  FactEncode e42;
  e42.fact = 42;
  e42.tokens = 7;
  e42.context_tokens = 3;
  enc.encodes.push_back(e42);
  ex.execute(enc);
  BatchPlan step;
  add_prefill(step, p, 0, p.computed_total());
  step.prompt_facts[0].private_kv = true;
  step.encodes.push_back(private_encode(p, 0, 3));
  ex.execute(step);
  CHECK(ex.pool().find(41) == nullptr);
  CHECK(max_rel_diff(ex.last_logits().select(0, 0), expect) < 1e-6);

  // Offload 42 and evict it, load it back, and run another request on it.
  BatchPlan out;
  out.offloads.push_back(FactLoad{42, 7, 0});
  out.evictions.push_back(42);
  out.released.push_back(p.request);
  ex.execute(out);
  CHECK(ex.pool().find(42) == nullptr);
  CHECK(ex.host_has(42));
  PromptSpec q = p;
  q.request = 9;
  q.facts = {{42, 7}};
  BatchPlan back;
  back.loads.push_back(FactLoad{42, 7, 0});
  back.host_evictions.push_back(42);  // after the load: the load still reads it
  add_prefill(back, q, 0, q.computed_total());
  ex.execute(back);
  CHECK_FALSE(ex.host_has(42));
  CHECK(ex.pool().find(42) != nullptr);
  CHECK(at::equal(ex.last_logits(), reference_logits(cpu_options(), q, 3)));
}

TEST_CASE("per-request facts beyond the reserved area are injected in rounds") {
  // Three facts from the host tier and one encode, each for the request only, with room in the
  // reserved area for one fact at a time: the executor injects what it holds and reuses it.
  PromptSpec p;
  p.facts = {{41, 5}, {42, 7}, {43, 6}, {44, 4}};
  const at::Tensor expect = reference_logits(cpu_options(), p, 0).select(0, 0);

  GpuExecutorOptions o = cpu_options();
  o.reserved_pool_tokens = kBlockTokens;
  GpuExecutor ex(o);
  encode_facts(ex, {p}, 0);
  BatchPlan out;
  for (FactId f : {41, 42, 43}) {
    out.offloads.push_back(FactLoad{f, 0, 0});
    out.evictions.push_back(f);
  }
  out.evictions.push_back(44);
  ex.execute(out);
  BatchPlan step;
  add_prefill(step, p, 0, p.computed_total());
  for (std::uint32_t i = 0; i < 3; ++i) {
    step.loads.push_back(
        FactLoad{p.facts[i].id, p.facts[i].tokens, 0, p.request, p.fact_position(i)});
    step.prompt_facts[i].private_kv = true;
  }
  step.encodes.push_back(private_encode(p, 3, 0));
  step.prompt_facts[3].private_kv = true;
  ex.execute(step);
  CHECK(ex.pool().resident_facts() == 0);
  CHECK(ex.last_stats().injected_tokens == 5 + 7 + 6 + 4);
  CHECK(max_rel_diff(ex.last_logits().select(0, 0), expect) < 1e-6);
}

TEST_CASE("per-request KV may come steps before the request's first chunk") {
  // The simulator admits a request, plans its not-admitted encode, and prefills it a step later
  // (the prefill waited for budget): the encode sets up the request's cache.
  PromptSpec p;
  p.facts = {{41, 5}, {42, 7}};
  const at::Tensor expect = reference_logits(cpu_options(), p, 2).select(0, 0);

  GpuExecutor ex(cpu_options());
  PromptSpec only42 = p;
  only42.facts = {{42, 7}};
  encode_facts(ex, {only42}, 2);
  BatchPlan early;
  early.encodes.push_back(private_encode(p, 0, 2));
  CHECK(refusal(ex, early).find("names no prompt_tokens") != std::string::npos);
  early.encodes[0].prompt_tokens = p.prompt_tokens();
  ex.execute(early);
  CHECK(ex.pool().find(41) == nullptr);
  BatchPlan later;
  add_prefill(later, p, 0, p.computed_total());
  later.prompt_facts[0].private_kv = true;
  ex.execute(later);
  CHECK(max_rel_diff(ex.last_logits().select(0, 0), expect) < 1e-6);
  // A second first chunk for the same request is still refused.
  CHECK(refusal(ex, later).find("already running") != std::string::npos);
}

TEST_CASE("plans the executor cannot perform are refused") {
  GpuExecutor ex(cpu_options());
  PromptSpec p;
  p.facts = {{51, 5}};
  p.header_cached = true;
  BatchPlan missing;  // fact 51 was never encoded
  add_prefill(missing, p, 0, p.computed_total());
  CHECK_THROWS_AS(ex.execute(missing), std::invalid_argument);
  CHECK_THROWS_AS(ex.execute(decode_plan(1234, 10)), std::invalid_argument);
}

namespace {

/// A step that offloads `p`'s facts to the host tier (beside the compute when `async`) and
/// evicts them from the pool.
BatchPlan offload_and_evict(const PromptSpec& p, bool async) {
  BatchPlan plan;
  for (const FactSpec& f : p.facts) {
    (async ? plan.async_offloads : plan.offloads).push_back(FactLoad{f.id, f.tokens, 0});
    plan.evictions.push_back(f.id);
  }
  return plan;
}

/// Facts 41 and 42 offloaded to the host tier and evicted, then loaded back asynchronously
/// (BatchPlan::async_loads) in one step and injected by `p` in the next, or in the same step
/// (the executor then waits for the copies itself). Returns the logits of p's prefill.
at::Tensor async_round_trip(const GpuExecutorOptions& o, const PromptSpec& p, bool same_step) {
  GpuExecutor ex(o);
  encode_facts(ex, {p}, 3);
  ex.execute(offload_and_evict(p, false));
  for (const FactSpec& f : p.facts) {
    REQUIRE(ex.pool().find(f.id) == nullptr);
    REQUIRE(ex.host_has(f.id));
  }
  BatchPlan load;
  for (const FactSpec& f : p.facts) load.async_loads.push_back(FactLoad{f.id, f.tokens, 0});
  if (same_step) {
    add_prefill(load, p, 0, p.computed_total());
    ex.execute(load);
  } else {
    ex.execute(load);
    for (const FactSpec& f : p.facts) CHECK(ex.pool().find(f.id) != nullptr);
    BatchPlan step;
    add_prefill(step, p, 0, p.computed_total());
    ex.execute(step);
  }
  return ex.last_logits().select(0, 0).clone();
}

std::vector<std::pair<const char*, GpuExecutorOptions>> executor_devices() {
  std::vector<std::pair<const char*, GpuExecutorOptions>> d{{"cpu fp32", cpu_options()}};
  if (cuda_ops_available()) {
    GpuExecutorOptions o = cpu_options();
    o.model = bf16_test_model();
    o.device = "cuda";
    o.dtype = DType::kBF16;
    o.pool_bytes = 64 * FactPool::block_bytes(o.model, 2);
    d.emplace_back("cuda bf16", o);
  } else {
    WARN("no CUDA device: asynchronous loads checked on the CPU only (copies run at once there)");
  }
  return d;
}

}  // namespace

TEST_CASE("asynchronous loads: the KV a later step injects is the KV that was offloaded") {
  PromptSpec p;
  p.facts = {{41, 21}, {42, 37}};
  p.header_cached = true;
  for (const auto& [device, o] : executor_devices()) {
    INFO(device);
    const at::Tensor expect = reference_logits(o, p, 3).select(0, 0);
    // Same batch shapes on the same device: the logits are bit-equal when the KV is.
    CHECK(at::equal(async_round_trip(o, p, false), expect));
    CHECK(at::equal(async_round_trip(o, p, true), expect));
  }
}

TEST_CASE(
    "asynchronous loads and offloads: a fact evicted or offloaded again before use is settled "
    "first") {
  PromptSpec p;
  p.facts = {{41, 21}, {42, 37}};
  for (const auto& [device, o] : executor_devices()) {
    INFO(device);
    GpuExecutor ex(o);
    encode_facts(ex, {p}, 3);
    // Offloaded beside the compute: the loads below wait for them.
    ex.execute(offload_and_evict(p, true));
    BatchPlan load;
    for (const FactSpec& f : p.facts) load.async_loads.push_back(FactLoad{f.id, f.tokens, 0});
    ex.execute(load);
    // 41 dropped from the pool and 42 from the host tier while their copies may still run.
    BatchPlan drop;
    drop.evictions.push_back(41);
    drop.host_evictions.push_back(42);
    ex.execute(drop);
    CHECK(ex.pool().find(41) == nullptr);
    CHECK(ex.host_has(41));
    CHECK(ex.pool().find(42) != nullptr);
    CHECK_FALSE(ex.host_has(42));
    // 42 goes back to the host tier intact: load it again into an empty pool and compare.
    BatchPlan again;  // offloaded and, in the next step, loaded back: the load waits for it
    again.async_offloads.push_back(FactLoad{42, 37, 0});
    again.evictions.push_back(42);
    ex.execute(again);
    BatchPlan back;
    back.async_loads.push_back(FactLoad{42, 37, 0});
    back.async_loads.push_back(FactLoad{41, 21, 0});
    add_prefill(back, p, 0, p.computed_total());
    ex.execute(back);
    CHECK(at::equal(ex.last_logits(), reference_logits(o, p, 3)));
  }
}

TEST_CASE("asynchronous loads reuse the blocks of the first evicted facts first") {
  // Loads wait for the offloads that free their blocks: the first load must get the first
  // victim's blocks (offloaded first), not the last one's.
  PromptSpec p;
  p.facts = {{51, 20}, {52, 20}, {53, 20}, {54, 20}};
  for (const auto& [device, o] : executor_devices()) {
    INFO(device);
    GpuExecutor ex(o);
    encode_facts(ex, {p}, 0);
    BatchPlan park;  // 53 and 54 to the host tier
    for (FactId f : {53, 54}) {
      park.offloads.push_back(FactLoad{f, 20, 0});
      park.evictions.push_back(f);
    }
    ex.execute(park);
    const std::vector<std::int32_t> first = ex.pool().find(51)->blocks;
    const std::vector<std::int32_t> second = ex.pool().find(52)->blocks;
    BatchPlan swap;  // 51 and 52 out, 53 and 54 in, all beside the compute
    for (FactId f : {51, 52}) {
      swap.async_offloads.push_back(FactLoad{f, 20, 0});
      swap.evictions.push_back(f);
    }
    for (FactId f : {53, 54}) swap.async_loads.push_back(FactLoad{f, 20, 0});
    ex.execute(swap);
    CHECK(ex.pool().find(53)->blocks == first);
    CHECK(ex.pool().find(54)->blocks == second);
  }
}

TEST_CASE("asynchronous copies that a step's pass does not need are issued after its launch") {
  // Facts 41 and 42 go to the host tier and come back beside the prefills of two text-only
  // requests: each prefill's logits are those of that request alone, and the KV the next step
  // injects is the KV that was offloaded (on CUDA, the copies follow the compute stream's point
  // held before each pass, not the pass); likewise with the copies issued first.
  PromptSpec p;
  p.facts = {{41, 21}, {42, 37}};
  p.header_cached = true;
  PromptSpec q;  // text only
  q.request = 2;
  PromptSpec r = q;
  r.request = 3;
  r.query = 9;
  for (const auto& [device, options] : executor_devices()) {
    for (const bool beside : {true, false}) {  // false: the copies first, as before 0337801
      INFO(device << (beside ? ", copies beside the pass" : ", copies first"));
      GpuExecutorOptions o = options;
      o.copies_beside_pass = beside;
      GpuExecutor ex(o);
      encode_facts(ex, {p}, 3);
      BatchPlan out = offload_and_evict(p, true);
      add_prefill(out, q, 0, q.computed_total());
      REQUIRE(copies_follow_forward(out));
      ex.execute(out);
      CHECK(at::equal(ex.last_logits(), reference_logits(o, q, 3)));
      CHECK(ex.pool().find(41) == nullptr);
      BatchPlan load;
      for (const FactSpec& f : p.facts) load.async_loads.push_back(FactLoad{f.id, f.tokens, 0});
      add_prefill(load, r, 0, r.computed_total());
      REQUIRE(copies_follow_forward(load));
      ex.execute(load);
      CHECK(at::equal(ex.last_logits(), reference_logits(o, r, 3)));
      BatchPlan use;
      add_prefill(use, p, 0, p.computed_total());
      ex.execute(use);
      CHECK(at::equal(ex.last_logits(), reference_logits(o, p, 3)));
    }
  }
}

TEST_CASE("a step whose pass injects a fact it also evicts is refused before any copy") {
  // Evicting a fact that the same step injects is not a plan the executor can perform; with
  // asynchronous copies in the step it is still refused (the copies are not moved after the pass).
  PromptSpec p;
  p.facts = {{41, 21}, {42, 37}};
  p.header_cached = true;
  GpuExecutor ex(cpu_options());
  encode_facts(ex, {p}, 3);
  BatchPlan bad;
  bad.async_offloads.push_back(FactLoad{41, 21, 0});
  bad.evictions.push_back(41);
  add_prefill(bad, p, 0, p.computed_total());
  CHECK_FALSE(copies_follow_forward(bad));
  CHECK(refusal(ex, bad).find("that the pool does not hold") != std::string::npos);
}
