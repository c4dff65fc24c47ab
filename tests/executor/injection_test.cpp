// The five correctness checks of KV injection on a tiny fp32 model on the CPU:
// (a) a fact encoded after exactly the tokens that precede it in the composed prompt, injected
//     with Chunked RoPE, gives the logits of a native full prefill of that prompt (1e-5);
// (b) rotation algebra: tests/kernels/reference_test.cpp (identity, delta shift);
// (c) composed positions are contiguous: tests/executor/layout_test.cpp;
// (d) V is bit-identical after injection, and K is the pool's K rotated at its position;
// (e) text and kv_inject with w = 0 differ (the comparison is not vacuous).
#include <ATen/ATen.h>

#include <memory>

#include "executor/gpu/gpu_executor.h"
#include "kernels/reference/rope.h"
#include "tests/catch.h"
#include "tests/executor/executor_test_util.h"

using namespace inferscale;
using namespace inferscale::test;

namespace {

PromptSpec three_fact_prompt() {
  PromptSpec p;
  p.request = 77;
  p.facts = {{1001, 5}, {1002, 7}, {1003, 4}};
  p.header_cached = true;
  return p;
}

// Encodes the prompt's facts with CWE context w (all of the preceding prompt when
// `exact_context`), then prefills the prompt in kv_inject mode; returns the query's logits.
at::Tensor inject_logits(GpuExecutor& ex, const PromptSpec& p, bool exact_context) {
  BatchPlan encode;
  for (std::size_t i = 0; i < p.facts.size(); ++i) {
    FactEncode e;
    e.fact = p.facts[i].id;
    e.tokens = p.facts[i].tokens;
    e.context_tokens = exact_context ? p.fact_position(i) : 0;
    encode.encodes.push_back(e);
  }
  ex.execute(encode);
  for (const FactSpec& f : p.facts) REQUIRE(ex.pool().find(f.id) != nullptr);
  BatchPlan prefill;
  add_prefill(prefill, p, 0, p.computed_total());
  const BatchResult r = ex.execute(prefill);
  REQUIRE(r.tokens.size() == 1);
  return ex.last_logits().select(0, 0).clone();
}

}  // namespace

TEST_CASE("(a) injected facts with exact CWE context reproduce a native prefill") {
  const PromptSpec p = three_fact_prompt();
  for (RopeMode mode : {RopeMode::kPreRope, RopeMode::kDelta}) {
    CAPTURE(mode == RopeMode::kPreRope ? "pre_rope" : "delta");
    auto src = std::make_shared<PrefixContextSource>(tiny_model().vocab, p);
    GpuExecutorOptions o = cpu_options(src);
    o.rope = mode;
    GpuExecutor ex(o);
    const at::Tensor injected = inject_logits(ex, p, true);
    const at::Tensor native = ex.prefill_logits(p.all_tokens(*src));
    CHECK(max_rel_diff(injected, native) < 1e-5);

    // The same prompt prefilled as text through a plan agrees with the native prefill too.
    PromptSpec text = p;
    text.request = 78;
    text.header_cached = false;
    for (FactSpec& f : text.facts) f.inject = false;
    BatchPlan plan;
    add_prefill(plan, text, 0, text.computed_total());
    ex.execute(plan);
    const at::Tensor text_native = ex.prefill_logits(text.all_tokens(*src));
    CHECK(max_rel_diff(ex.last_logits().select(0, 0), text_native) < 1e-5);
  }
}

TEST_CASE("(d) V is bit-identical after injection and K is the pool's K rotated once") {
  const PromptSpec p = three_fact_prompt();
  GpuExecutor ex(cpu_options());
  inject_logits(ex, p, false);
  const auto [k, v] = ex.request_kv(p.request, p.prompt_tokens());  // [L, n, KV, D]
  const at::Tensor storage = ex.pool().storage();                   // [blocks, L, 2, 16, KV, D]
  const ModelConfig m = tiny_model();
  const RopeTableView table = ex.model().rope_table();
  for (std::size_t i = 0; i < p.facts.size(); ++i) {
    const FactPool::Entry* e = ex.pool().find(p.facts[i].id);
    REQUIRE(e != nullptr);
    for (std::uint32_t t = 0; t < e->tokens; ++t) {
      const std::int32_t slot = e->slot(t);
      const at::Tensor pool_kv =
          storage.select(0, slot / 16).select(2, slot % 16);  // [L, 2, KV, D]
      const std::int64_t pos = p.fact_position(i) + t;
      CHECK(at::equal(v.select(1, pos), pool_kv.select(1, 1)));
      // K: the pool's pre-RoPE key rotated to the composed position by the reference.
      at::Tensor expect = pool_kv.select(1, 0).contiguous().clone();
      for (std::uint32_t l = 0; l < m.layers; ++l) {
        for (std::uint32_t h = 0; h < m.kv_heads; ++h) {
          float* row = expect.select(0, l).select(0, h).data_ptr<float>();
          rope_row_reference<true>(row, 0, row, 0, std::int32_t(m.head_dim), RopeStyle::kNeox,
                                   table, std::int32_t(pos), DType::kF32);
        }
      }
      CHECK(at::equal(k.select(1, pos), expect));
      CHECK_FALSE(at::equal(k.select(1, pos), pool_kv.select(1, 0)));  // it was rotated
    }
  }
}

TEST_CASE("(e) text and kv_inject with w = 0 differ") {
  const PromptSpec p = three_fact_prompt();
  GpuExecutor ex(cpu_options());
  const at::Tensor alone = inject_logits(ex, p, false);
  SyntheticTokenSource src(tiny_model().vocab, 5);
  const at::Tensor native = ex.prefill_logits(p.all_tokens(src));
  CHECK(max_rel_diff(alone, native) > 1e-3);
}
