// Byte-level BPE on a hand-made vocabulary (merge order, special tokens, decoding) and the real
// SmolLM2 tokenizer against ids from an independent implementation.
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "executor/tokenizer/bpe_tokenizer.h"
#include "executor/tokenizer/chat_template.h"
#include "executor/weights/gguf.h"
#include "tests/catch.h"
#include "traces/error.h"

using namespace inferscale;

namespace {

/// The 256 byte symbols, then `extra` tokens.
BpeTokenizer tiny(const std::vector<std::string>& extra, const std::vector<std::string>& merges,
                  std::vector<std::int64_t> types = {}) {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.push_back(bpe_byte_to_unicode(std::uint8_t(b)));
  tokens.insert(tokens.end(), extra.begin(), extra.end());
  if (!types.empty()) types.insert(types.begin(), 256, 1);
  return BpeTokenizer(tokens, merges, types, PreTokenizer::kGpt2);
}

std::string gguf_path() {
  if (const char* p = std::getenv("INFERSCALE_MODEL_GGUF")) return p;
  return std::string(INFERSCALE_SOURCE_DIR) + "/.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

}  // namespace

TEST_CASE("byte symbols follow GPT-2's bytes_to_unicode", "[tokenizer]") {
  CHECK(bpe_byte_to_unicode('a') == "a");
  CHECK(bpe_byte_to_unicode(' ') == "\xc4\xa0");   // U+0120 'Ġ'
  CHECK(bpe_byte_to_unicode('\n') == "\xc4\x8a");  // U+010A 'Ċ'
  CHECK(bpe_byte_to_unicode(0) == "\xc4\x80");     // U+0100
  CHECK(bpe_byte_to_unicode(0xad) == "\xc5\x83");  // U+0143: the 68th unprintable byte
  CHECK(bpe_byte_to_unicode(0xe9) == "\xc3\xa9");  // printable Latin-1 maps to itself
}

TEST_CASE("merges apply lowest rank first, within pre-tokenized pieces", "[tokenizer]") {
  const std::string G = bpe_byte_to_unicode(' ');
  // ids: 256 "ab", 257 "abc", 258 "Ġa"; ranks: a+b, ab+c, Ġ+a
  const BpeTokenizer t = tiny({"ab", "abc", G + "a"}, {"a b", "ab c", G + " a"});
  CHECK(t.encode("abc") == std::vector<std::int32_t>{257});
  // " abx": a+b (rank 0) wins over Ġ+a (rank 2), so Ġ stays alone.
  CHECK(t.encode(" abx") == std::vector<std::int32_t>{' ', 256, 'x'});
  CHECK(t.encode(" ax") == std::vector<std::int32_t>{258, 'x'});
  CHECK(t.encode("abab") == std::vector<std::int32_t>{256, 256});
  // No merge crosses a piece boundary: "a" and "b" are separated by the pre-tokenizer.
  CHECK(t.encode("a b") == std::vector<std::int32_t>{'a', ' ', 'b'});
  CHECK(t.decode(t.encode("abc abx\n")) == "abc abx\n");
  const BpeTokenizer reversed = tiny({"ab", "abc", G + "a"}, {G + " a", "a b", "ab c"});
  CHECK(reversed.encode(" abx") == std::vector<std::int32_t>{258, 'b', 'x'});
}

TEST_CASE("special tokens are matched in the text before pre-tokenization", "[tokenizer]") {
  const BpeTokenizer t = tiny({"<|im_start|>", "<|im_end|>", "<|im"}, {}, {3, 3, 4});
  const auto ids = t.encode("<|im_start|>user\nhi<|im_end|>");
  REQUIRE(ids.size() == 1 + 4 + 1 + 2 + 1);
  CHECK(ids.front() == 256);
  CHECK(ids.back() == 257);
  CHECK(t.encode("<|im_start|>", false).size() == 12);              // as plain text
  CHECK(t.encode("<|imx") == std::vector<std::int32_t>{258, 'x'});  // user-defined token
  CHECK(t.decode(ids) == "<|im_start|>user\nhi<|im_end|>");
  CHECK(t.token_id("<|im_end|>") == 257);
  CHECK(t.token_id("nope") == -1);
}

TEST_CASE("a merge naming an unknown token is refused", "[tokenizer]") {
  CHECK_THROWS_AS(tiny({}, {"a b"}), std::invalid_argument);
  CHECK_THROWS_AS(tiny({"ab"}, {"ab"}), std::invalid_argument);
}

TEST_CASE("ChatML renders SmolLM2's template", "[tokenizer]") {
  CHECK(chatml_render({{"system", "S"}, {"user", "Q"}}, true) ==
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n"
        "<|im_start|>assistant\n");
}

TEST_CASE("SmolLM2 tokenizer: ids equal the independent reference's", "[tokenizer][model]") {
  if (!std::filesystem::exists(gguf_path())) {
    INFERSCALE_SKIP("model not fetched: run scripts/fetch-model.sh (" << gguf_path() << ")");
  }
  const std::string golden = std::string(INFERSCALE_SOURCE_DIR) +
                             "/tests/executor/tokenizer/data/smollm2_tokenizer_golden.json";
  std::ifstream in(golden);
  REQUIRE(in.good());
  const nlohmann::json cases = nlohmann::json::parse(in);
  GgufFile g(gguf_path());
  const BpeTokenizer t = BpeTokenizer::from_gguf(g);
  CHECK(t.vocab_size() == 49152);
  CHECK(t.pre() == PreTokenizer::kSmollm);
  CHECK(t.token_id("<|im_start|>") == 1);
  CHECK(t.token_id("<|im_end|>") == 2);
  REQUIRE(cases.size() >= 20);
  for (const auto& c : cases) {
    const std::string text = c["text"];
    INFO("text: " << text);
    CHECK(t.encode(text) == c["ids"].get<std::vector<std::int32_t>>());
    CHECK(t.decode(t.encode(text)) == text);
  }
}
