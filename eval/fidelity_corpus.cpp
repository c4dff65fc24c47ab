#include "eval/fidelity_corpus.h"

#include <algorithm>

#include "executor/tokenizer/chat_template.h"
#include "traces/bm25.h"

namespace inferscale {

FidelityCorpus::FidelityCorpus(const FidelityConfig& config,
                               std::shared_ptr<const BpeTokenizer> tokenizer)
    : config_(config), tokenizer_(std::move(tokenizer)), data_(load_locomo(config.data)) {
  header_text_ = chatml_open("system") + config.system_prompt + "\n";
  footer_text_ = chatml_close() + chatml_open("user");
  header_ = tokenizer_->encode(header_text_);
  footer_ = tokenizer_->encode(footer_text_);
  const std::uint32_t k_max = *std::max_element(config.ks.begin(), config.ks.end());
  for (std::uint32_t c = 0; c < data_.conversations.size(); ++c) {
    const LocomoConversation& conv = data_.conversations[c];
    std::unique_ptr<Bm25Index> index[2];
    for (const LocomoQa& qa : conv.qa) {
      if (config.questions > 0 && questions_.size() >= config.questions) return;
      if (qa.answer.empty() || std::find(config.categories.begin(), config.categories.end(),
                                         qa.category) == config.categories.end()) {
        continue;
      }
      const int s = qa.speaker;
      if (conv.facts[s].empty()) continue;
      if (!index[s]) {
        index[s] = std::make_unique<Bm25Index>();
        for (const LocomoFact& f : conv.facts[s]) index[s]->add(f.text);
      }
      EvalQuestion q;
      q.index = std::uint32_t(questions_.size());
      q.conversation = c;
      q.speaker = s;
      q.category = qa.category;
      q.text = qa.question;
      q.answer = qa.answer;
      q.ranked = index[s]->top_k(qa.question, k_max);
      q.query_ids = tokenizer_->encode(qa.question + chatml_close() + chatml_open("assistant"));
      questions_.push_back(std::move(q));
    }
  }
}

std::string FidelityCorpus::fact_line(std::uint32_t c, int s, std::uint32_t i) const {
  return "- " + data_.conversations[c].facts[s][i].text + "\n";
}

const std::vector<std::int32_t>& FidelityCorpus::fact_ids(std::uint32_t c, int s, std::uint32_t i) {
  auto [it, fresh] = facts_.try_emplace({c, s, i});
  if (fresh) it->second = tokenizer_->encode(fact_line(c, s, i));
  return it->second;
}

const std::vector<std::int32_t>& FidelityCorpus::context_ids(std::uint32_t c, int s,
                                                             std::uint32_t i, std::uint32_t w) {
  auto [it, fresh] = contexts_.try_emplace({c, s, i, w});
  if (fresh && w > 0) {
    const LocomoConversation& conv = data_.conversations[c];
    const std::uint32_t anchor = conv.facts[s][i].anchor_turn;
    std::string text;
    for (std::uint32_t t = anchor - std::min(anchor, w); t < anchor; ++t) {
      const LocomoTurn& turn = conv.turns[t];
      text += conv.speakers[turn.speaker] + ": " + turn.text + "\n";
    }
    it->second = tokenizer_->encode(text);
  }
  return it->second;
}

std::string FidelityCorpus::prompt_text(const EvalQuestion& q, std::uint32_t k) const {
  std::string s = header_text_;
  const std::size_t n = std::min<std::size_t>(k, q.ranked.size());
  for (std::size_t j = q.ranked.size() - n; j < q.ranked.size(); ++j) {
    s += fact_line(q.conversation, q.speaker, q.ranked[j]);
  }
  return s + footer_text_ + q.text + chatml_close() + chatml_open("assistant");
}

}  // namespace inferscale
