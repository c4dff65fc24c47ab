// The fidelity evaluation: config errors, answer F1, and on the real model (CPU, fp32) the
// exactness condition: with k = 1 and each fact encoded after exactly the header it follows,
// kv_inject reproduces text mode's first token and its logits to rounding.
#include <filesystem>
#include <fstream>

#include "cli/eval_config.h"
#include "tests/catch.h"
#include "tests/eval/model_paths.h"
#include "traces/error.h"

using namespace inferscale;

namespace {

std::string write_config(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / "inferscale_fidelity_test";
  std::filesystem::create_directories(dir);
  const auto path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

/// Why the real-model tests cannot run here ("" when they can).
std::string model_missing() {
  if (!std::filesystem::exists(test::smollm2_gguf())) {
    return "model not fetched: run scripts/fetch-model.sh (" + test::smollm2_gguf() + ")";
  }
  if (!std::filesystem::exists(test::locomo_dir())) {
    return "LoCoMo not found at " + test::locomo_dir();
  }
  return "";
}

/// SmolLM2 on the CPU in fp32 over LoCoMo.
FidelityConfig smollm2_cpu() {
  FidelityConfig c;
  c.model = test::smollm2_gguf();
  c.data = test::locomo_dir();
  c.device = "cpu";
  c.dtype = "f32";
  return c;
}

}  // namespace

TEST_CASE("fidelity config: values, defaults and errors with their position", "[eval]") {
  const FidelityConfig c = load_fidelity_config(
      write_config("ok.yaml",
                   "model: m.gguf\nk: [10, 5]\nw: [0, 3]\nrecompute:\n  - {first_tokens: 2}\n"
                   "  - {ratio: 0.25}\nrecompute_w: [3]\ndevice: cuda\n"));
  CHECK(c.model == "m.gguf");
  CHECK(c.ks == std::vector<std::uint32_t>{5, 10});
  CHECK(c.dtype == "bf16");
  REQUIRE(c.recompute.size() == 2);
  CHECK(c.recompute[0].label() == "first_tokens=2");
  CHECK(c.recompute[1].label() == "ratio=0.25");
  CHECK(c.recompute_windows == std::vector<std::uint32_t>{3});
  CHECK_THROWS_WITH(load_fidelity_config(write_config("nomodel.yaml", "k: [1]\n")),
                    Catch::Contains("model"));
  CHECK_THROWS_WITH(load_fidelity_config(write_config("badk.yaml", "model: m\nk: [0]\n")),
                    Catch::Contains("expected integers in [1, 200]"));
  CHECK_THROWS_WITH(
      load_fidelity_config(write_config("badr.yaml", "model: m\nrecompute: [{ratio: 2}]\n")),
      Catch::Contains("ratio") && Catch::Contains("(0, 1)"));
  CHECK_THROWS_WITH(
      load_fidelity_config(write_config("badw.yaml", "model: m\nw: [0]\nrecompute_w: [5]\n")),
      Catch::Contains("recompute_w"));
  CHECK_THROWS_WITH(load_fidelity_config(write_config("unknown.yaml", "model: m\nkk: 1\n")),
                    Catch::Contains("kk"));
  CHECK_THROWS_AS(load_fidelity_config(write_config("syntax.yaml", "model: [\n")), InputError);
}

TEST_CASE("answer F1 is SQuAD's: case, punctuation and articles ignored", "[eval]") {
  CHECK(answer_f1("The dog, Max.", "max the dog") == Approx(1.0));
  CHECK(answer_f1("Max", "a dog named Max") == Approx(2 * (1.0 * (1.0 / 3)) / (1.0 + 1.0 / 3)));
  CHECK(answer_f1("cat", "dog") == 0.0);
  CHECK(answer_f1("", "dog") == 0.0);
}

TEST_CASE("exactness: k = 1 with the header as context reproduces text mode (fp32)",
          "[eval][model]") {
  if (const std::string why = model_missing(); !why.empty()) INFERSCALE_SKIP(why);
  FidelityConfig c = smollm2_cpu();
  c.ks = {1};
  c.windows = {0};
  c.questions = 6;
  c.answer_tokens = 1;
  c.batch = 6;
  c.exactness = true;
  const FidelityResult r = run_fidelity(c, [](const std::string&) {});
  REQUIRE(r.exactness.questions == 6);
  CHECK(r.exactness.agreement() >= 0.99);
  CHECK(r.exactness.max_rel_logit_diff < 1e-4);
  CHECK(r.piece_tokenization_mismatches == 0);
  // Encoding alone (w = 0, no header) is not exact: the distributions differ measurably.
  bool any_kl = false;
  for (const auto& s : r.summary) {
    if (s.setting == "none") any_kl = any_kl || s.kl_mean > 1e-3;
  }
  CHECK(any_kl);
}

TEST_CASE("kv_reference: the same format agrees with itself, fp8 is scored against bf16",
          "[eval][model]") {
  if (const std::string why = model_missing(); !why.empty()) INFERSCALE_SKIP(why);
  FidelityConfig c = smollm2_cpu();
  c.ks = {3};
  c.windows = {0};
  c.questions = 4;
  c.answer_tokens = 4;
  c.batch = 4;
  c.exactness = false;
  auto row = [](const FidelityResult& r, const std::string& setting) {
    for (const auto& s : r.summary) {
      if (s.setting == setting) return s;
    }
    FAIL("no row " << setting);
    return FidelitySummaryRow{};
  };
  c.kv_dtype = "bf16";
  c.kv_reference = "bf16";
  const FidelityResult same = run_fidelity(c, [](const std::string&) {});
  const FidelitySummaryRow s = row(same, "vs_bf16");
  CHECK(s.questions == 4);
  CHECK(s.kl_mean < 1e-9);
  CHECK(s.top1_agreement == 1.0);
  CHECK(s.greedy_agreement == 1.0);
  // Against text mode the same run differs (w = 0): the reference rows are not text's.
  CHECK(row(same, "none").kl_mean > 1e-3);
  c.kv_dtype = "fp8";
  const FidelityResult fp8 = run_fidelity(c, [](const std::string&) {});
  const FidelitySummaryRow f = row(fp8, "vs_bf16");
  CHECK(f.kl_mean > 0);
  CHECK(f.kl_mean < row(fp8, "none").kl_mean);
}

TEST_CASE("answer agreement strips list markers and compares cut answers on shared words",
          "[eval]") {
  using W = std::vector<std::string>;
  CHECK(answer_words("- Paris, France.") == W{"paris", "france"});
  CHECK(answer_words("  * 1. The dog") == W{"the", "dog"});
  CHECK(answer_words("\xe2\x80\xa2 Max") == W{"max"});
  CHECK(answer_words("2020 was the year") == W{"2020", "was", "the", "year"});
  CHECK(answer_words("3.5 hours") == W{"35", "hours"});  // a number, not a list marker
  CHECK(answer_words("") == W{});
  const W paris{"paris"}, long_a{"paris", "is", "the", "capital", "of"},
      long_b{"paris", "is", "the", "capital", "of", "france"}, other{"lyon"};
  CHECK(answers_agree(paris, false, paris, false));
  CHECK(!answers_agree(paris, false, other, false));
  // Ended by itself after one word, the other certainly says more: they differ in full ...
  CHECK(!answers_agree(paris, false, long_b, true));
  // ... but agree on their first word.
  CHECK(answers_agree(paris, false, long_b, true, 1));
  // Both cut at the token limit, one a word shorter (its marker took a token): they agree.
  CHECK(answers_agree(long_a, true, long_b, true));
  CHECK(answers_agree(long_a, true, long_b, true, 3));
  CHECK(!answers_agree(W{"paris", "was", "the", "x"}, true, long_b, true, 3));
  CHECK(!answers_agree(long_a, false, long_b, false));
}

TEST_CASE("fidelity config: kv_dtype and agreement_words", "[eval]") {
  const FidelityConfig c = load_fidelity_config(
      write_config("kv.yaml", "model: m.gguf\nkv_dtype: fp8\nagreement_words: 4\n"));
  CHECK(c.kv_dtype == "fp8");
  CHECK(c.agreement_words == 4);
  CHECK(load_fidelity_config(write_config("kv0.yaml", "model: m.gguf\n")).kv_dtype.empty());
  CHECK_THROWS_WITH(load_fidelity_config(write_config("kvbad.yaml", "model: m\nkv_dtype: fp4\n")),
                    Catch::Contains("kv_dtype") && Catch::Contains("fp8"));
  CHECK(load_fidelity_config(write_config("kvr.yaml", "model: m\nkv_reference: bf16\n"))
            .kv_reference == "bf16");
  CHECK_THROWS_WITH(
      load_fidelity_config(write_config("kvrbad.yaml", "model: m\nkv_reference: x\n")),
      Catch::Contains("kv_reference") && Catch::Contains("int8"));
}
