#pragma once
// @brief The executor side of the fidelity evaluation: prompts as BatchPlans on a GpuExecutor
// with real weights and a TextTokenSource, fact encodes (CWE and recompute pieces), batched
// prefill + greedy decode, and the keys that drive ratio recompute.

#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "eval/fidelity.h"
#include "eval/fidelity_corpus.h"
#include "executor/gpu/gpu_executor.h"
#include "executor/gpu/text_token_source.h"

namespace inferscale {

/// One piece of a composed prompt's fact region: a registered fact id, computed or injected.
struct FactPiece {
  FactId id = 0;
  std::uint32_t tokens = 0;
  bool inject = false;
};

/// A prompt: its fact pieces (in order) and its query.
struct EvalPrompt {
  const EvalQuestion* question = nullptr;
  std::vector<FactPiece> pieces;
  std::uint32_t recomputed = 0;  // fact tokens computed although kv_inject
};

/// What one batch of prompts produced.
struct EvalRun {
  std::vector<RequestId> requests;
  std::vector<std::uint32_t> prompt_tokens;
  at::Tensor first_logits;                         // [prompts, vocab] fp32, CPU
  std::vector<std::vector<std::int32_t>> answers;  // greedy, cut at the end of the turn
  std::vector<double> ttft_ms;                     // per prompt: its prefill step's time
  std::vector<std::uint32_t> computed;             // per prompt: prefilled tokens
};

/// An encode: a fact id, the context before it and its tokens.
struct EncodeSpec {
  FactId id = 0;
  std::vector<std::int32_t> context, tokens;
};

class EvalExecutor {
 public:
  /// `pool_blocks`: fact blocks the pool holds; `cache_rows`: KV cache rows.
  EvalExecutor(const FidelityConfig& config, const ModelConfig& model,
               std::shared_ptr<WeightLoader> weights, std::shared_ptr<TextTokenSource> tokens,
               const std::vector<std::int32_t>& header, const std::vector<std::int32_t>& footer,
               std::uint64_t pool_blocks, std::uint32_t cache_rows, std::uint32_t positions);

  /// Registers and encodes facts into the pool (store = true).
  void encode(const std::vector<EncodeSpec>& specs);
  void evict(const std::vector<FactId>& ids);
  /// Prefills the prompts (header cached, in steps of at most max_step_tokens) and decodes
  /// answer_tokens greedy tokens; releases the requests unless `keep`.
  EvalRun run(const std::vector<EvalPrompt>& prompts, bool keep);
  void release(const std::vector<RequestId>& requests);
  /// Keys of one layer of a running request, [n, kv_heads, head_dim] on the device.
  at::Tensor keys(RequestId request, std::uint32_t layer, std::uint32_t n) const {
    return ex_->request_keys(request, layer, n);
  }
  std::int32_t free_blocks() { return ex_->pool().free_blocks(); }
  std::string machine() { return ex_->ops().device_name(); }
  std::uint32_t header_tokens() const { return header_tokens_; }
  std::uint32_t footer_tokens() const { return footer_tokens_; }
  std::uint32_t layers() const { return layers_; }

 private:
  FidelityConfig config_;
  std::shared_ptr<TextTokenSource> tokens_;
  std::unique_ptr<GpuExecutor> ex_;
  std::uint32_t header_tokens_, footer_tokens_, layers_;
  RequestId next_request_ = 1;
  std::vector<std::int32_t> end_tokens_;
};

}  // namespace inferscale
