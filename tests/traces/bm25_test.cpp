#include "traces/bm25.h"

#include <cmath>

#include "tests/catch.h"

using namespace inferscale;

TEST_CASE("bm25 tokenizer: lowercase alphanumeric runs without stop words, no stemming") {
  std::vector<std::string> t;
  bm25_tokenize("What did Caroline's dogs do at 3pm? The DOG-park!", t);
  CHECK(t == std::vector<std::string>{"caroline", "dogs", "3pm", "dog", "park"});
  CHECK(bm25_is_stop_word("the"));
  CHECK_FALSE(bm25_is_stop_word("dog"));
}

// Hand-checked example (k1 = 1.2, b = 0.75).
//   d0 "Caroline adopted a dog"                       -> caroline adopted dog            |d0| = 3
//   d1 "Melanie paints; the dog barks at the dog park" -> melanie paints dog barks dog park  |d1| =
//   6 d2 "Caroline likes pottery"                        -> caroline likes pottery          |d2| =
//   3 N = 3, avgdl = 12 / 3 = 4.
// Query "What dog did Caroline adopt?" -> dog caroline adopt ("adopt" matches nothing: no stemming)
//   idf(dog) = idf(caroline) = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln 1.6 = 0.4700036
//   length norm K(|d|) = 1.2 * (0.25 + 0.75 * |d| / 4): K(3) = 0.975, K(6) = 1.65
//   d0: dog tf 1: 0.4700036 * 2.2 / (1 + 0.975) = 0.5235484; caroline the same -> 1.0470969
//   d1: dog tf 2: 0.4700036 * 2 * 2.2 / (2 + 1.65) = 0.5665797                 -> 0.5665797
//   d2: caroline tf 1                                                          -> 0.5235484
// Ranking d0 > d1 > d2 (the repeated "dog" outweighs d1's length), so top_k lists 2, 1, 0.
TEST_CASE("bm25 scores a hand-checked example") {
  Bm25Index idx;
  idx.add("Caroline adopted a dog");
  idx.add("Melanie paints; the dog barks at the dog park");
  idx.add("Caroline likes pottery");
  std::vector<double> s;
  idx.score("What dog did Caroline adopt?", s);
  REQUIRE(s.size() == 3);
  CHECK(s[0] == Approx(1.0470969).epsilon(1e-6));
  CHECK(s[1] == Approx(0.5665797).epsilon(1e-6));
  CHECK(s[2] == Approx(0.5235484).epsilon(1e-6));
  CHECK(idx.top_k("What dog did Caroline adopt?", 3) == std::vector<std::uint32_t>{2, 1, 0});
  CHECK(idx.top_k("What dog did Caroline adopt?", 2) == std::vector<std::uint32_t>{1, 0});
  CHECK(idx.top_k("What dog did Caroline adopt?", 10).size() == 3);
}

TEST_CASE("bm25 breaks ties by document order and ranks zero scores too") {
  Bm25Index idx;
  idx.add("Caroline likes pottery");
  idx.add("Melanie runs");
  idx.add("Caroline likes pottery");
  idx.add("Melanie swims");
  // d0 and d2 tie (earlier ranks higher); d1 and d3 score 0 and follow in order. Best last.
  CHECK(idx.top_k("pottery", 4) == std::vector<std::uint32_t>{3, 1, 2, 0});
  CHECK(idx.top_k("pottery pottery", 4) == idx.top_k("pottery", 4));  // query terms count once
  CHECK(idx.top_k("nothing matches", 2) == std::vector<std::uint32_t>{1, 0});
}

TEST_CASE("bm25 on an empty index returns nothing") {
  Bm25Index idx;
  CHECK(idx.top_k("anything", 5).empty());
}
