#pragma once
// @brief Where token ids come from. No tokenizer exists yet: the synthetic default derives ids
// from hashes, so a fact's tokens are the same whether it is encoded or inlined as text. A real
// tokenizer plugs in here later.

#include <cstdint>
#include <vector>

#include "traces/types.h"

namespace inferscale {

/// @brief Token ids of every piece of a composed prompt and of a fact's CWE context.
class TokenSource {
 public:
  virtual ~TokenSource() = default;
  /// The shared system prompt's first n tokens (the same sequence for every n).
  virtual std::vector<std::int32_t> header(std::uint32_t n) = 0;
  /// The text between the facts and the query.
  virtual std::vector<std::int32_t> footer(std::uint32_t n) = 0;
  /// The fact's n tokens.
  virtual std::vector<std::int32_t> fact(FactId fact, std::uint32_t n) = 0;
  /// The n tokens of conversation before the fact (Context-Window Encoding).
  virtual std::vector<std::int32_t> context(FactId fact, std::uint32_t n) = 0;
  /// The request's query tokens.
  virtual std::vector<std::int32_t> query(RequestId request, std::uint32_t n) = 0;
};

/// @brief Deterministic ids in [0, vocab): hash(fact id, index) for facts and their context,
/// hash(request id, index) for queries, fixed sequences for header and footer.
class SyntheticTokenSource : public TokenSource {
 public:
  explicit SyntheticTokenSource(std::uint32_t vocab, std::uint64_t seed = 0)
      : vocab_(vocab), seed_(seed) {}
  std::vector<std::int32_t> header(std::uint32_t n) override;
  std::vector<std::int32_t> footer(std::uint32_t n) override;
  std::vector<std::int32_t> fact(FactId fact, std::uint32_t n) override;
  std::vector<std::int32_t> context(FactId fact, std::uint32_t n) override;
  std::vector<std::int32_t> query(RequestId request, std::uint32_t n) override;

 private:
  std::vector<std::int32_t> hashed(std::uint64_t kind, std::uint64_t id, std::uint32_t n) const;
  std::uint32_t vocab_;
  std::uint64_t seed_;
};

}  // namespace inferscale
