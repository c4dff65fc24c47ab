#pragma once
// @brief BpeTokenizer: byte-level BPE (GPT-2 family: SmolLM2, Llama 3, Qwen2) built from GGUF
// metadata (tokenizer.ggml.tokens, .merges, .token_type, special token ids, .pre) or from a
// Hugging Face tokenizer.json.
//
// encode(): special tokens (control and user-defined tokens) are matched in the text first,
// longest first; the text between them is pre-tokenized (pretokenizer.h), each piece's bytes
// are mapped to printable code points (GPT-2's bytes_to_unicode), and adjacent symbols are
// merged by the lowest-ranked merge until none applies.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "executor/tokenizer/pretokenizer.h"

namespace inferscale {

class GgufFile;

class BpeTokenizer {
 public:
  /// `tokens[id]` in mapped form; `merges` "left right"; `token_types` as GGUF's (1 normal,
  /// 3 control, 4 user-defined; empty: all normal). Throws std::invalid_argument when a merge
  /// names a token that is not in the vocabulary.
  BpeTokenizer(std::vector<std::string> tokens, const std::vector<std::string>& merges,
               const std::vector<std::int64_t>& token_types, PreTokenizer pre);

  /// From a GGUF file (tokenizer.ggml.model gpt2). InputError on other tokenizer models or
  /// pre-tokenizers it does not implement.
  static BpeTokenizer from_gguf(const GgufFile& gguf);
  /// From a tokenizer.json (model.type BPE with byte-level pre-tokenization). InputError
  /// otherwise.
  static BpeTokenizer from_tokenizer_json(const std::string& path);

  /// Token ids of `text`; special tokens are recognised when `special` is true.
  std::vector<std::int32_t> encode(std::string_view text, bool special = true) const;
  /// The text of ids (special tokens as their text).
  std::string decode(const std::vector<std::int32_t>& ids) const;
  /// The bytes of one token.
  std::string token_text(std::int32_t id) const;
  /// Id of a token given in its mapped form (e.g. "<|im_end|>"), or -1.
  std::int32_t token_id(std::string_view token) const;

  std::size_t vocab_size() const { return tokens_.size(); }
  std::int32_t bos() const { return bos_; }
  std::int32_t eos() const { return eos_; }
  PreTokenizer pre() const { return pre_; }

 private:
  void encode_piece(std::string_view piece, std::vector<std::int32_t>& out) const;

  std::vector<std::string> tokens_;  // mapped form
  std::unordered_map<std::string, std::int32_t> ids_;
  std::unordered_map<std::uint64_t, std::uint32_t> ranks_;  // (left id, right id) -> rank
  std::unordered_map<std::uint64_t, std::int32_t> merged_;  // (left id, right id) -> id
  std::vector<std::string> specials_;                       // longest first
  bool special_first_[256] = {};                            // bytes a special token starts with
  std::int32_t byte_ids_[256];
  PreTokenizer pre_;
  std::int32_t bos_ = -1, eos_ = -1;
  mutable std::unordered_map<std::string, std::vector<std::int32_t>> cache_;
};

/// GPT-2's map from a byte to its printable code point (bytes_to_unicode), UTF-8 encoded.
std::string bpe_byte_to_unicode(std::uint8_t byte);

}  // namespace inferscale
