// The byte-level pre-tokenizer: the GPT-2 pattern's alternatives one by one, digits isolated
// for SmolLM, Unicode classes, and pieces that always tile the input.
#include <random>
#include <string>
#include <vector>

#include "executor/tokenizer/pretokenizer.h"
#include "executor/tokenizer/unicode_classes.h"
#include "tests/catch.h"

using namespace inferscale;

namespace {

std::vector<std::string> split(const std::string& text, PreTokenizer kind = PreTokenizer::kGpt2) {
  std::vector<std::string_view> pieces;
  pretokenize(text, kind, pieces);
  return {pieces.begin(), pieces.end()};
}

using V = std::vector<std::string>;

}  // namespace

TEST_CASE("GPT-2 pattern: words take one leading space, contractions split", "[tokenizer]") {
  CHECK(split("Hello world") == V{"Hello", " world"});
  CHECK(split("I'm sure they'll say it's fine") ==
        V{"I", "'m", " sure", " they", "'ll", " say", " it", "'s", " fine"});
  CHECK(split("don't 'twas") == V{"don", "'t", " '", "twas"});
  CHECK(split("'sam") == V{"'s", "am"});      // contractions match before letters
  CHECK(split("it'S") == V{"it", "'", "S"});  // case-sensitive
}

TEST_CASE("GPT-2 pattern: whitespace runs leave their last space to the next word", "[tokenizer]") {
  CHECK(split("a  b") == V{"a", " ", " b"});
  CHECK(split("a   b") == V{"a", "  ", " b"});
  CHECK(split("x\n\ny") == V{"x", "\n", "\n", "y"});
  CHECK(split("x\n") == V{"x", "\n"});
  CHECK(split("end   ") == V{"end", "   "});
  CHECK(split("\t tab") == V{"\t", " tab"});
  CHECK(split(" ") == V{" "});
}

TEST_CASE("GPT-2 pattern: numbers and punctuation runs", "[tokenizer]") {
  CHECK(split("abc 123 4.5") == V{"abc", " 123", " 4", ".", "5"});
  CHECK(split("Hi!!! (ok)") == V{"Hi", "!!!", " (", "ok", ")"});
  CHECK(split("a -- b") == V{"a", " --", " b"});
}

TEST_CASE("SmolLM pre-tokenizer isolates every digit first", "[tokenizer]") {
  CHECK(split("abc 123", PreTokenizer::kSmollm) == V{"abc", " ", "1", "2", "3"});
  CHECK(split("May 7, 2023", PreTokenizer::kSmollm) ==
        V{"May", " ", "7", ",", " ", "2", "0", "2", "3"});
  CHECK(split("x1y", PreTokenizer::kSmollm) == V{"x", "1", "y"});
}

TEST_CASE("Unicode letters and numbers beyond ASCII", "[tokenizer]") {
  CHECK(split("Café naïve") == V{"Café", " naïve"});
  CHECK(split("你好，世界") == V{"你好", "，", "世界"});
  CHECK(split("Россия и") == V{"Россия", " и"});
  CHECK(split("x٣y") == V{"x", "٣", "y"});            // Arabic-Indic digit three
  CHECK(split("a\u00a0b") == V{"a", "\u00a0", "b"});  // no-break space is white space
  CHECK(unicode_is_letter(0x4e2d));
  CHECK(unicode_is_number(0x0663));
  CHECK(unicode_is_number(0x00bd));  // ½ is No
  CHECK_FALSE(unicode_is_letter(0x00bd));
  CHECK(unicode_is_whitespace(0x3000));
}

TEST_CASE("pieces tile any input, invalid UTF-8 included", "[tokenizer]") {
  std::mt19937 rng(3);
  const std::string alphabet = std::string("ab 1'\n\t.,") + "\xc3\xa9" + "\xe4\xb8\xad" + "\xff";
  for (int trial = 0; trial < 500; ++trial) {
    std::string s;
    const int n = int(rng() % 40);
    for (int i = 0; i < n; ++i) s += alphabet[rng() % alphabet.size()];
    for (PreTokenizer kind : {PreTokenizer::kGpt2, PreTokenizer::kSmollm}) {
      std::string joined;
      for (const auto& p : split(s, kind)) {
        REQUIRE_FALSE(p.empty());
        joined += p;
      }
      REQUIRE(joined == s);
    }
  }
}
