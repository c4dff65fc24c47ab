#pragma once
// @brief `inferscale eval fidelity`: how closely kv_inject (Chunked RoPE + Context-Window
// Encoding, optionally with selective recompute) reproduces text injection on LoCoMo, with a
// real model and tokenizer on the GPU executor.
//
// For each answerable question (categories 1-4) the asking speaker's facts are ranked with the
// importer's BM25; the top k (best last) are inlined into a ChatML prompt
//   header (system turn opening) | "- fact\n" x k | footer (system close, user open) | query
// and the same prompt is served in text mode (everything prefilled) and in kv_inject mode for
// each window w (each fact encoded once after the w conversation turns before its source turn,
// its pre-RoPE keys rotated to the composed positions). Per (k, w, recompute setting): first-
// token top-1 agreement and KL(text || mode) of the next-token distribution, agreement of the
// greedy answers (token sequences up to answer_tokens), token F1 of each mode's answer against
// the gold answer, and TTFT (the prefill step's time on the executor).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace inferscale {

/// Selective recompute of injected facts: none, the first n tokens of each fact, or the
/// fraction r of injected tokens whose keys deviate most from a full prefill's.
struct RecomputeSetting {
  enum class Kind { kNone, kFirstTokens, kRatio };
  Kind kind = Kind::kNone;
  std::uint32_t first_tokens = 0;
  double ratio = 0;
  std::string label() const;  // "none", "first_tokens=2", "ratio=0.1"
};

struct FidelityConfig {
  std::string model;              // GGUF or safetensors checkpoint
  std::string data;               // LoCoMo: a directory or file that holds it; "": searched for
  std::string data_where;         // position of `data:` (or of the file), for errors
  std::string device = "cpu";     // cpu | cuda
  std::string dtype;              // f32 | bf16 | f16 (default: f32 cpu, bf16 cuda)
  std::string rope = "pre_rope";  // pre_rope | delta
  std::string kv_dtype;           // stored fact KV: "" (as computed) | bf16 | fp8 | int8
  /// "" or bf16 | fp8 | int8: kv_inject is also scored against kv_inject with fact KV stored in
  /// this format (rows of setting "vs_<format>": KL(reference || kv_dtype), the first token
  /// and the answers compared with the reference run's instead of text mode's).
  std::string kv_reference;
  std::uint32_t agreement_words = 3;  // the "first n words agree" column's n
  std::vector<std::uint32_t> ks = {5, 10, 20, 50};
  std::vector<std::uint32_t> windows = {0, 5, 20, 50};
  std::uint32_t questions = 0;  // 0: all answerable questions; else the first n (file order)
  std::vector<int> categories = {1, 2, 3, 4};
  std::uint32_t answer_tokens = 16;              // greedy tokens per answer
  std::uint32_t batch = 64;                      // questions per executor step
  std::vector<RecomputeSetting> recompute;       // evaluated besides plain kv_inject
  std::vector<std::uint32_t> recompute_windows;  // empty: every window
  std::uint32_t recompute_layer = 1;             // ratio: deviation measured on this layer's keys
  bool exactness = true;                         // the k = 1 prefix-context check
  std::string system_prompt =
      "You are a helpful assistant with a memory of the user. Answer the user's question in a "
      "few words, using these memories:";
  std::string out = "results/fidelity";
  std::string source;  // the config file (echoed in the outputs)
};

/// One (k, w, setting) of the summary; mode "text" rows have w = -1.
struct FidelitySummaryRow {
  std::uint32_t k = 0;
  int w = -1;
  std::string setting;  // text | none | first_tokens=n | ratio=r | vs_<kv_reference>
  std::uint32_t questions = 0;
  double top1_agreement = 0;  // first token equal to text's
  double kl_mean = 0;         // KL(text || mode) of the first next-token distribution, nats
  double kl_p90 = 0;
  double greedy_agreement = 0;      // whole greedy answer equal to text's
  double answer_agreement = 0;      // normalized answers equal (answers_agree)
  double first_word_agreement = 0;  // first content word equal
  double words_agreement = 0;       // first agreement_words words equal
  double f1 = 0;                    // token F1 vs gold (mean)
  double f1_text = 0;               // text mode's on the same questions
  double ttft_ms = 0;               // mean prefill step time per batch
  double computed_tokens = 0;       // mean prefilled tokens per question
  double recomputed_tokens = 0;     // mean recomputed fact tokens per question
};

/// One question under one (k, w, setting).
struct FidelityQuestionRow {
  std::uint32_t question = 0;  // index in the evaluated list
  std::string conversation;
  int category = 0;
  std::uint32_t k = 0;
  int w = -1;
  std::string setting;
  std::int32_t first_token = 0, text_first_token = 0;
  double kl = 0;
  bool greedy_equal = false;
  bool answer_equal = false, first_word_equal = false, words_equal = false;
  double f1 = 0;
  std::string answer;
};

/// k = 1, each fact encoded after exactly the header it follows in the composed prompt.
struct ExactnessResult {
  std::uint32_t questions = 0;
  std::uint32_t top1_equal = 0;
  double max_abs_logit_diff = 0;
  double max_rel_logit_diff = 0;  // max |a - b| / max |b| over questions
  double max_kl = 0;
  double agreement() const { return questions ? double(top1_equal) / questions : 0.0; }
};

struct FidelityResult {
  FidelityConfig config;
  std::string machine, model_description;
  std::uint32_t questions = 0;
  std::vector<FidelitySummaryRow> summary;
  std::vector<FidelityQuestionRow> rows;
  ExactnessResult exactness;
  double seconds = 0;
  std::uint64_t piece_tokenization_mismatches = 0;  // prompts whose whole-text ids differ
};

using FidelityLog = std::function<void(const std::string&)>;

/// Runs the evaluation.
FidelityResult run_fidelity(const FidelityConfig& config, const FidelityLog& log);

/// fidelity.csv (summary), fidelity_questions.csv, exactness.json and summary.md under
/// `dir`, each written to a temporary name and renamed.
void write_fidelity_outputs(const FidelityResult& result, const std::string& dir);
/// The summary as a Markdown table (also printed by the CLI).
std::string fidelity_table(const FidelityResult& result);

/// An answer's content words: leading list markers ("-", "*", "\u2022", "1." or "1)") and
/// whitespace stripped, lowercased, punctuation dropped (articles kept).
std::vector<std::string> answer_words(const std::string& answer);

/// Whether two answers' content words agree on their first `n` words (0: all of them). An answer
/// cut at the token limit (`a_cut`, `b_cut`) is compared only over the words both have, so that
/// a list marker spending one token of the limit does not count as a difference.
bool answers_agree(const std::vector<std::string>& a, bool a_cut, const std::vector<std::string>& b,
                   bool b_cut, std::size_t n = 0);

/// SQuAD-style token F1 (lowercase, punctuation and articles dropped) of two answers.
double answer_f1(const std::string& prediction, const std::string& gold);

}  // namespace inferscale
