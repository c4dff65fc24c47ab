#pragma once
// @brief A TokenSource of real text: the ids of every piece of a composed prompt (header,
// facts, footer, queries) and of each fact's CWE context, registered by the caller (usually
// from a tokenizer) under the fact and request ids its plans use.

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "executor/gpu/token_source.h"
#include "executor/tokenizer/bpe_tokenizer.h"

namespace inferscale {

class TextTokenSource : public TokenSource {
 public:
  /// `tokenizer` may be null when every piece is registered as ids.
  explicit TextTokenSource(std::shared_ptr<const BpeTokenizer> tokenizer = nullptr)
      : tokenizer_(std::move(tokenizer)) {}

  /// Registration (text through the tokenizer, or ids); each returns the piece's ids.
  const std::vector<std::int32_t>& set_header(const std::string& text);
  const std::vector<std::int32_t>& set_footer(const std::string& text);
  const std::vector<std::int32_t>& set_fact(FactId fact, std::vector<std::int32_t> ids);
  const std::vector<std::int32_t>& set_context(FactId fact, std::vector<std::int32_t> ids);
  const std::vector<std::int32_t>& set_query(RequestId request, std::vector<std::int32_t> ids);
  void set_header_ids(std::vector<std::int32_t> ids) { header_ = std::move(ids); }
  void set_footer_ids(std::vector<std::int32_t> ids) { footer_ = std::move(ids); }
  void forget_query(RequestId request) { queries_.erase(request); }
  void forget_fact(FactId fact);

  /// Throws std::invalid_argument when asked for more tokens than were registered, or for an
  /// unregistered id: a plan that disagrees with its token source is a bug, never padded.
  std::vector<std::int32_t> header(std::uint32_t n) override;
  std::vector<std::int32_t> footer(std::uint32_t n) override;
  std::vector<std::int32_t> fact(FactId fact, std::uint32_t n) override;
  /// The last n tokens of the fact's registered context (the n tokens just before it).
  std::vector<std::int32_t> context(FactId fact, std::uint32_t n) override;
  std::vector<std::int32_t> query(RequestId request, std::uint32_t n) override;

  const BpeTokenizer* tokenizer() const { return tokenizer_.get(); }

 private:
  std::shared_ptr<const BpeTokenizer> tokenizer_;
  std::vector<std::int32_t> header_, footer_;
  std::unordered_map<FactId, std::vector<std::int32_t>> facts_, contexts_;
  std::unordered_map<RequestId, std::vector<std::int32_t>> queries_;
};

}  // namespace inferscale
