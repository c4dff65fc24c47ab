#pragma once
// @brief The evaluated questions and the token ids of every prompt piece: LoCoMo's answerable
// questions, each with its speaker's facts ranked by BM25 (best last), and the ChatML text of
// the header, fact lines, footer, query and CWE context, tokenized once.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "eval/fidelity.h"
#include "executor/tokenizer/bpe_tokenizer.h"
#include "traces/locomo.h"

namespace inferscale {

struct EvalQuestion {
  std::uint32_t index = 0;
  std::uint32_t conversation = 0;
  int speaker = 0;
  int category = 0;
  std::string text, answer;
  std::vector<std::uint32_t> ranked;  // the speaker's fact indices, best last (up to max k)
  std::vector<std::int32_t> query_ids;
};

class FidelityCorpus {
 public:
  FidelityCorpus(const FidelityConfig& config, std::shared_ptr<const BpeTokenizer> tokenizer);

  const std::vector<EvalQuestion>& questions() const { return questions_; }
  const std::vector<std::int32_t>& header_ids() const { return header_; }
  const std::vector<std::int32_t>& footer_ids() const { return footer_; }
  /// "- fact\n" of fact `index` of (conversation, speaker).
  const std::vector<std::int32_t>& fact_ids(std::uint32_t conversation, int speaker,
                                            std::uint32_t index);
  /// The w turns before the fact's source turn, "Name: text\n" each (fewer at the start).
  const std::vector<std::int32_t>& context_ids(std::uint32_t conversation, int speaker,
                                               std::uint32_t index, std::uint32_t w);
  /// The composed prompt's text with the top k facts (to check piece-wise tokenization).
  std::string prompt_text(const EvalQuestion& q, std::uint32_t k) const;
  const std::string& conversation_id(std::uint32_t c) const { return data_.conversations[c].id; }
  const BpeTokenizer& tokenizer() const { return *tokenizer_; }

 private:
  std::string fact_line(std::uint32_t c, int s, std::uint32_t i) const;

  FidelityConfig config_;
  std::shared_ptr<const BpeTokenizer> tokenizer_;
  LocomoData data_;
  std::vector<EvalQuestion> questions_;
  std::string header_text_, footer_text_;
  std::vector<std::int32_t> header_, footer_;
  std::map<std::tuple<std::uint32_t, int, std::uint32_t>, std::vector<std::int32_t>> facts_;
  std::map<std::tuple<std::uint32_t, int, std::uint32_t, std::uint32_t>, std::vector<std::int32_t>>
      contexts_;
};

}  // namespace inferscale
