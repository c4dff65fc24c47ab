#include <algorithm>
#include <stdexcept>

#include "eval/fidelity_runner.h"

namespace inferscale {

namespace {

constexpr std::uint64_t kMaxStepTokens = 65536;  // prefill tokens per executor step

DType parse_dtype(const std::string& d) {
  if (d == "bf16") return DType::kBF16;
  if (d == "f16") return DType::kF16;
  return DType::kF32;
}

}  // namespace

EvalExecutor::EvalExecutor(const FidelityConfig& config, const ModelConfig& model,
                           std::shared_ptr<WeightLoader> weights,
                           std::shared_ptr<TextTokenSource> tokens,
                           const std::vector<std::int32_t>& header,
                           const std::vector<std::int32_t>& footer, std::uint64_t pool_blocks,
                           std::uint32_t cache_rows, std::uint32_t positions)
    : config_(config),
      tokens_(std::move(tokens)),
      header_tokens_(std::uint32_t(header.size())),
      footer_tokens_(std::uint32_t(footer.size())),
      layers_(model.layers) {
  tokens_->set_header_ids(header);
  tokens_->set_footer_ids(footer);
  GpuExecutorOptions o;
  o.model = model;
  o.device = config.device;
  o.dtype = parse_dtype(config.dtype);
  o.rope = config.rope == "delta" ? RopeMode::kDelta : RopeMode::kPreRope;
  if (!config.kv_dtype.empty()) o.fact_kv = parse_kv_format(config.kv_dtype);
  o.pool_bytes = pool_blocks * FactPool::block_bytes(model, std::uint32_t(dtype_bytes(o.dtype)));
  o.reserved_pool_tokens = std::uint32_t(header.size()) + 64;
  o.kv_cache_tokens = cache_rows;
  o.decode_reserve_tokens = config.answer_tokens + 1;
  o.rope_positions = std::int32_t(positions);
  o.keep_logits = true;
  o.tokens = tokens_;
  o.weights = std::move(weights);
  ex_ = std::make_unique<GpuExecutor>(o);
  for (const char* t : {"<|im_end|>", "<|endoftext|>"}) {
    if (const BpeTokenizer* tok = tokens_->tokenizer()) {
      if (tok->token_id(t) >= 0) end_tokens_.push_back(tok->token_id(t));
    }
  }
}

void EvalExecutor::encode(const std::vector<EncodeSpec>& specs) {
  BatchPlan plan;
  std::uint64_t tokens = 0;
  auto flush = [&] {
    if (plan.encodes.empty()) return;
    ex_->execute(plan);
    plan.clear();
    tokens = 0;
  };
  for (const EncodeSpec& s : specs) {
    tokens_->set_fact(s.id, s.tokens);
    tokens_->set_context(s.id, s.context);
    FactEncode e;
    e.fact = s.id;
    e.tokens = std::uint32_t(s.tokens.size());
    e.context_tokens = std::uint32_t(s.context.size());
    plan.encodes.push_back(e);
    tokens += e.tokens + e.context_tokens;
    if (tokens >= 4 * kMaxStepTokens) flush();
  }
  flush();
}

void EvalExecutor::evict(const std::vector<FactId>& ids) {
  BatchPlan plan;
  plan.evictions = ids;
  ex_->execute(plan);
  for (FactId f : ids) tokens_->forget_fact(f);
}

void EvalExecutor::release(const std::vector<RequestId>& requests) {
  if (requests.empty()) return;
  BatchPlan plan;
  plan.released = requests;
  ex_->execute(plan);
  for (RequestId r : requests) tokens_->forget_query(r);
}

EvalRun EvalExecutor::run(const std::vector<EvalPrompt>& prompts, bool keep) {
  EvalRun out;
  const std::size_t n = prompts.size();
  out.answers.resize(n);
  out.ttft_ms.resize(n);
  out.computed.resize(n);
  std::vector<at::Tensor> logits;
  std::vector<std::int32_t> next(n);
  std::size_t begin = 0;
  while (begin < n) {  // prefill steps of at most kMaxStepTokens computed tokens
    BatchPlan plan;
    std::uint64_t step_tokens = 0;
    std::size_t end = begin;
    for (; end < n; ++end) {
      const EvalPrompt& p = prompts[end];
      PrefillItem item;
      item.request = next_request_++;
      item.header_tokens = header_tokens_;
      item.footer_tokens = footer_tokens_;
      item.query_tokens = std::uint32_t(p.question->query_ids.size());
      item.facts_begin = std::uint32_t(plan.prompt_facts.size());
      std::uint32_t pos = header_tokens_, computed = 0;
      for (const FactPiece& piece : p.pieces) {
        PromptFact f;
        f.fact = piece.id;
        f.tokens = piece.tokens;
        f.position = pos;
        f.inject = piece.inject;
        plan.prompt_facts.push_back(f);
        pos += piece.tokens;
        if (!piece.inject) computed += piece.tokens;
      }
      item.facts_end = std::uint32_t(plan.prompt_facts.size());
      item.prompt_tokens = pos + footer_tokens_ + item.query_tokens;
      item.computed_total = computed + footer_tokens_ + item.query_tokens;
      item.computed_now = item.computed_total;
      item.header_cached = true;
      item.first_chunk = item.last_chunk = true;
      if (end > begin && step_tokens + item.computed_total > kMaxStepTokens) {
        --next_request_;
        plan.prompt_facts.resize(item.facts_begin);
        break;
      }
      tokens_->set_query(item.request, p.question->query_ids);
      step_tokens += item.computed_total;
      plan.prefills.push_back(item);
      out.requests.push_back(item.request);
      out.prompt_tokens.push_back(item.prompt_tokens);
      out.computed[end] = item.computed_total;
    }
    const BatchResult r = ex_->execute(plan);
    const double ms = double(r.duration_ns - r.phases.encode_ns - r.phases.load_ns) / 1e6;
    logits.push_back(ex_->last_logits().clone());
    for (std::size_t i = begin; i < end; ++i) {
      out.ttft_ms[i] = ms;
      next[i] = r.tokens.at(i - begin);
    }
    begin = end;
  }
  out.first_logits = at::cat(logits, 0);
  std::vector<bool> done(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    out.answers[i].push_back(next[i]);
    done[i] = std::find(end_tokens_.begin(), end_tokens_.end(), next[i]) != end_tokens_.end();
  }
  for (std::uint32_t step = 1; step < config_.answer_tokens; ++step) {
    BatchPlan plan;
    std::vector<std::size_t> who;
    for (std::size_t i = 0; i < n; ++i) {
      if (done[i]) continue;
      plan.decodes.push_back(DecodeItem{out.requests[i], out.prompt_tokens[i] + step - 1});
      who.push_back(i);
    }
    if (who.empty()) break;
    const BatchResult r = ex_->execute(plan);
    for (std::size_t j = 0; j < who.size(); ++j) {
      const std::int32_t t = r.tokens.at(j);
      out.answers[who[j]].push_back(t);
      if (std::find(end_tokens_.begin(), end_tokens_.end(), t) != end_tokens_.end()) {
        done[who[j]] = true;
      }
    }
  }
  // Answers end before the end-of-turn token.
  for (auto& a : out.answers) {
    const auto it = std::find_first_of(a.begin(), a.end(), end_tokens_.begin(), end_tokens_.end());
    a.erase(it, a.end());
  }
  if (!keep) release(out.requests);
  return out;
}

}  // namespace inferscale
