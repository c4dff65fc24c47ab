#include "executor/gpu/text_token_source.h"

#include <stdexcept>

namespace inferscale {

namespace {

std::vector<std::int32_t> prefix(const std::vector<std::int32_t>& ids, std::uint32_t n,
                                 const char* what) {
  if (n > ids.size()) {
    throw std::invalid_argument(std::string("TextTokenSource: ") + what + " has " +
                                std::to_string(ids.size()) + " tokens, asked for " +
                                std::to_string(n));
  }
  return {ids.begin(), ids.begin() + n};
}

template <typename Map, typename Key>
const std::vector<std::int32_t>& lookup(const Map& m, Key k, const char* what) {
  const auto it = m.find(k);
  if (it == m.end()) {
    throw std::invalid_argument(std::string("TextTokenSource: no ") + what + " " +
                                std::to_string(k) + " registered");
  }
  return it->second;
}

}  // namespace

const std::vector<std::int32_t>& TextTokenSource::set_header(const std::string& text) {
  if (!tokenizer_) throw std::invalid_argument("TextTokenSource: no tokenizer for text");
  return header_ = tokenizer_->encode(text);
}

const std::vector<std::int32_t>& TextTokenSource::set_footer(const std::string& text) {
  if (!tokenizer_) throw std::invalid_argument("TextTokenSource: no tokenizer for text");
  return footer_ = tokenizer_->encode(text);
}

const std::vector<std::int32_t>& TextTokenSource::set_fact(FactId fact,
                                                           std::vector<std::int32_t> ids) {
  return facts_[fact] = std::move(ids);
}

const std::vector<std::int32_t>& TextTokenSource::set_context(FactId fact,
                                                              std::vector<std::int32_t> ids) {
  return contexts_[fact] = std::move(ids);
}

const std::vector<std::int32_t>& TextTokenSource::set_query(RequestId request,
                                                            std::vector<std::int32_t> ids) {
  return queries_[request] = std::move(ids);
}

void TextTokenSource::forget_fact(FactId fact) {
  facts_.erase(fact);
  contexts_.erase(fact);
}

std::vector<std::int32_t> TextTokenSource::header(std::uint32_t n) {
  return prefix(header_, n, "the header");
}

std::vector<std::int32_t> TextTokenSource::footer(std::uint32_t n) {
  return prefix(footer_, n, "the footer");
}

std::vector<std::int32_t> TextTokenSource::fact(FactId f, std::uint32_t n) {
  return prefix(lookup(facts_, f, "fact"), n, "a fact");
}

std::vector<std::int32_t> TextTokenSource::context(FactId f, std::uint32_t n) {
  if (n == 0) return {};
  const auto& c = lookup(contexts_, f, "context of fact");
  if (n > c.size()) {
    throw std::invalid_argument("TextTokenSource: context of fact " + std::to_string(f) + " has " +
                                std::to_string(c.size()) + " tokens, asked for " +
                                std::to_string(n));
  }
  return {c.end() - n, c.end()};
}

std::vector<std::int32_t> TextTokenSource::query(RequestId r, std::uint32_t n) {
  return prefix(lookup(queries_, r, "query"), n, "a query");
}

}  // namespace inferscale
