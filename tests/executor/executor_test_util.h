#pragma once
// @brief Helpers of the executor tests: a tiny model, prompts and plans built by hand.

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "executor/executor.h"
#include "executor/gpu/gpu_executor.h"
#include "executor/gpu/token_source.h"

namespace inferscale::test {

/// A tiny Llama-shaped model (GQA, llama3 rope scaling) for fp32 CPU tests.
ModelConfig tiny_model();

/// One fact of a prompt.
struct FactSpec {
  FactId id;
  std::uint32_t tokens;
  bool inject = true;
};

/// A composed prompt: header + facts + footer + query.
struct PromptSpec {
  RequestId request = 1;
  std::uint32_t header = 8, footer = 3, query = 6;
  std::vector<FactSpec> facts;
  bool header_cached = false;

  std::uint32_t prompt_tokens() const;
  /// Composed position of fact i's first token.
  std::uint32_t fact_position(std::size_t i) const;
  /// Tokens the model computes (header unless cached, inline facts, footer, query).
  std::uint32_t computed_total() const;
  /// Every token id of the composed prompt, in position order.
  std::vector<std::int32_t> all_tokens(TokenSource& src) const;
};

/// Appends the prompt's facts to plan.prompt_facts and a prefill item for computed tokens
/// [done, done + now) to plan.prefills.
void add_prefill(BatchPlan& plan, const PromptSpec& p, std::uint32_t done, std::uint32_t now);

/// A token source whose CWE context of a fact is exactly the composed prompt before it (the
/// header and the facts before it): the condition under which injection reproduces a prefill.
class PrefixContextSource : public SyntheticTokenSource {
 public:
  PrefixContextSource(std::uint32_t vocab, const PromptSpec& prompt);
  std::vector<std::int32_t> context(FactId fact, std::uint32_t n) override;

 private:
  PromptSpec prompt_;
};

/// Options of a CPU fp32 executor on the tiny model.
GpuExecutorOptions cpu_options(std::shared_ptr<TokenSource> tokens = nullptr);

/// max |a - b| / max |b|.
double max_rel_diff(const at::Tensor& a, const at::Tensor& b);
/// ||a - b|| / ||b||.
double rel_l2(const at::Tensor& a, const at::Tensor& b);

/// A Llama-shaped model large enough for the bf16 GPU tests' kernels (head dim 128, GQA 8/2).
ModelConfig bf16_test_model(RopeLayout layout = RopeLayout::kNeox);
/// Options of a bf16 CUDA executor on bf16_test_model(layout) (64 pool blocks, 8192 cache
/// rows, logits kept).
GpuExecutorOptions gpu_bf16_options(std::uint64_t seed, RopeLayout layout = RopeLayout::kNeox);
/// A plan of one decode step of request `r` over `context` keys.
BatchPlan decode_plan(RequestId r, std::uint32_t context);
/// `base` twice with max_batch_tokens = max_tokens: as it is (no warm-up, no padding), and with
/// warm_rows and row_bucket set (passes of more than warm_rows tokens padded).
std::pair<GpuExecutorOptions, GpuExecutorOptions> plain_and_padded(GpuExecutorOptions base,
                                                                   std::uint32_t max_tokens,
                                                                   std::uint32_t warm_rows,
                                                                   std::uint32_t row_bucket);
/// One step that encodes every injected fact of `prompts` after `context_tokens` context tokens.
void encode_facts(GpuExecutor& ex, const std::vector<PromptSpec>& prompts,
                  std::uint32_t context_tokens);

}  // namespace inferscale::test
