#include "tests/executor/executor_test_util.h"

#include <stdexcept>

namespace inferscale::test {

ModelConfig tiny_model() {
  ModelConfig m;
  m.name = "tiny";
  m.layers = 2;
  m.hidden = 64;
  m.heads = 4;
  m.kv_heads = 2;
  m.head_dim = 16;
  m.ffn = 96;
  m.vocab = 101;
  m.rope_theta = 10000.0;
  m.rope_scaling_factor = 8.0;
  m.rope_original_max_positions = 64;
  m.max_positions = 1024;
  return m;
}

std::uint32_t PromptSpec::prompt_tokens() const {
  std::uint32_t n = header + footer + query;
  for (const FactSpec& f : facts) n += f.tokens;
  return n;
}

std::uint32_t PromptSpec::fact_position(std::size_t i) const {
  std::uint32_t pos = header;
  for (std::size_t j = 0; j < i; ++j) pos += facts[j].tokens;
  return pos;
}

std::uint32_t PromptSpec::computed_total() const {
  std::uint32_t n = (header_cached ? 0 : header) + footer + query;
  for (const FactSpec& f : facts) n += f.inject ? 0 : f.tokens;
  return n;
}

std::vector<std::int32_t> PromptSpec::all_tokens(TokenSource& src) const {
  std::vector<std::int32_t> out = src.header(header);
  for (const FactSpec& f : facts) {
    const auto t = src.fact(f.id, f.tokens);
    out.insert(out.end(), t.begin(), t.end());
  }
  const auto ft = src.footer(footer), q = src.query(request, query);
  out.insert(out.end(), ft.begin(), ft.end());
  out.insert(out.end(), q.begin(), q.end());
  return out;
}

void add_prefill(BatchPlan& plan, const PromptSpec& p, std::uint32_t done, std::uint32_t now) {
  PrefillItem item;
  item.request = p.request;
  item.header_tokens = p.header;
  item.footer_tokens = p.footer;
  item.query_tokens = p.query;
  item.facts_begin = std::uint32_t(plan.prompt_facts.size());
  for (std::size_t i = 0; i < p.facts.size(); ++i) {
    PromptFact f;
    f.fact = p.facts[i].id;
    f.tokens = p.facts[i].tokens;
    f.position = p.fact_position(i);
    f.inject = p.facts[i].inject;
    plan.prompt_facts.push_back(f);
  }
  item.facts_end = std::uint32_t(plan.prompt_facts.size());
  item.prompt_tokens = p.prompt_tokens();
  item.computed_total = p.computed_total();
  item.computed_done = done;
  item.computed_now = now;
  item.header_cached = p.header_cached;
  item.first_chunk = done == 0;
  item.last_chunk = done + now == item.computed_total;
  plan.prefills.push_back(item);
}

PrefixContextSource::PrefixContextSource(std::uint32_t vocab, const PromptSpec& prompt)
    : SyntheticTokenSource(vocab), prompt_(prompt) {}

std::vector<std::int32_t> PrefixContextSource::context(FactId fact, std::uint32_t n) {
  if (n == 0) return {};  // encoded alone (w = 0)
  for (std::size_t i = 0; i < prompt_.facts.size(); ++i) {
    if (prompt_.facts[i].id != fact) continue;
    std::vector<std::int32_t> prefix = header(prompt_.header);
    for (std::size_t j = 0; j < i; ++j) {
      const auto t = this->fact(prompt_.facts[j].id, prompt_.facts[j].tokens);
      prefix.insert(prefix.end(), t.begin(), t.end());
    }
    if (prefix.size() != n) throw std::logic_error("PrefixContextSource: context length");
    return prefix;
  }
  return SyntheticTokenSource::context(fact, n);
}

BatchPlan decode_plan(RequestId r, std::uint32_t context) {
  BatchPlan plan;
  plan.decodes.push_back(DecodeItem{r, context});
  return plan;
}

std::pair<GpuExecutorOptions, GpuExecutorOptions> plain_and_padded(GpuExecutorOptions base,
                                                                   std::uint32_t max_tokens,
                                                                   std::uint32_t warm_rows,
                                                                   std::uint32_t row_bucket) {
  base.max_batch_tokens = max_tokens;
  GpuExecutorOptions padded = base;
  padded.warm_rows = warm_rows;
  padded.row_bucket = row_bucket;
  return {base, padded};
}

GpuExecutorOptions gpu_bf16_options(std::uint64_t seed, RopeLayout layout) {
  GpuExecutorOptions o;
  o.model = bf16_test_model(layout);
  o.device = "cuda";
  o.dtype = DType::kBF16;
  o.pool_bytes = 64 * FactPool::block_bytes(o.model, 2);
  o.kv_cache_tokens = 8192;
  o.seed = seed;
  o.keep_logits = true;
  return o;
}

GpuExecutorOptions cpu_options(std::shared_ptr<TokenSource> tokens) {
  GpuExecutorOptions o;
  o.model = tiny_model();
  o.device = "cpu";
  o.dtype = DType::kF32;
  o.pool_bytes = 64 * FactPool::block_bytes(o.model, 4);
  o.reserved_pool_tokens = 256;
  o.kv_cache_tokens = 2048;
  o.decode_reserve_tokens = 4;
  o.seed = 5;
  o.keep_logits = true;
  o.tokens = std::move(tokens);
  return o;
}

double max_rel_diff(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor fa = a.to(at::kDouble), fb = b.to(at::kDouble);
  return (fa - fb).abs().max().item<double>() / fb.abs().max().item<double>();
}

double rel_l2(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor da = a.to(at::kDouble), db = b.to(at::kDouble);
  return (da - db).norm().item<double>() / db.norm().item<double>();
}

ModelConfig bf16_test_model(RopeLayout layout) {
  ModelConfig m;
  m.name = "bf16-test";
  m.layers = 8;
  m.hidden = 1024;
  m.heads = 8;
  m.kv_heads = 2;
  m.head_dim = 128;
  m.ffn = 2816;
  m.vocab = 32000;
  m.rope_theta = 500000.0;
  m.rope_scaling_factor = 8.0;
  m.rope_layout = layout;
  m.max_positions = 4096;
  return m;
}

void encode_facts(GpuExecutor& ex, const std::vector<PromptSpec>& prompts,
                  std::uint32_t context_tokens) {
  BatchPlan plan;
  for (const PromptSpec& p : prompts) {
    for (const FactSpec& f : p.facts) {
      if (!f.inject) continue;
      FactEncode e;
      e.fact = f.id;
      e.tokens = f.tokens;
      e.context_tokens = context_tokens;
      plan.encodes.push_back(e);
    }
  }
  ex.execute(plan);
}

}  // namespace inferscale::test
