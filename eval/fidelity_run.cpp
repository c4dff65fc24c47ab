// run_fidelity: the loops over (k, batch of questions, w, recompute setting) and the metrics.
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "eval/fidelity.h"
#include "eval/fidelity_corpus.h"
#include "eval/fidelity_runner.h"
#include "executor/gpu/checkpoint_loader.h"
#include "executor/weights/gguf.h"
#include "kernels/params.h"

namespace inferscale {

namespace {

/// Variants of a fact's registered pieces.
enum Variant : int { kText = 0, kInject = 1, kHeadText = 2, kTailInject = 3, kExact = 4 };
using FactKey = std::tuple<std::uint32_t, int, std::uint32_t, int, std::uint32_t, std::uint32_t>;

struct Accum {
  std::uint32_t n = 0, top1 = 0, greedy = 0, answer = 0, first_word = 0, words = 0;
  std::vector<double> kl;
  double f1 = 0, f1_text = 0, ttft = 0, computed = 0, recomputed = 0;
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::size_t(std::min<double>(v.size() - 1, std::floor(p * double(v.size()))))];
}

class Runner {
 public:
  Runner(const FidelityConfig& c, const FidelityLog& log) : c_(c), log_(log) {}

  FidelityResult run() {
    c10::InferenceMode guard;
    const auto t0 = std::chrono::steady_clock::now();
    const auto ckpt = std::shared_ptr<const LlamaCheckpoint>(open_checkpoint(c_.model));
    std::shared_ptr<const BpeTokenizer> tok;
    if (c_.model.size() > 5 && c_.model.compare(c_.model.size() - 5, 5, ".gguf") == 0) {
      tok = std::make_shared<BpeTokenizer>(BpeTokenizer::from_gguf(GgufFile(c_.model)));
    } else {
      tok = std::make_shared<BpeTokenizer>(
          BpeTokenizer::from_tokenizer_json(c_.model + "/tokenizer.json"));
    }
    corpus_ = std::make_unique<FidelityCorpus>(c_, tok);
    const auto& qs = corpus_->questions();
    log_("questions: " + std::to_string(qs.size()) + " answerable (categories 1-4)");
    result_.config = c_;
    result_.questions = std::uint32_t(qs.size());
    result_.model_description = ckpt->describe();
    check_tokenization();
    const ModelConfig& m = ckpt->config();
    k_max_ = c_.ks.back();

    // What must be encoded up front: each retrieved fact for each window (plain and
    // first_tokens tails), and the exactness facts.
    std::vector<EncodeSpec> specs;
    std::uint64_t blocks = 0;
    std::uint32_t longest_encode = 0, longest_prompt = 0;
    auto add_spec = [&](FactId id, std::vector<std::int32_t> ctx, std::vector<std::int32_t> t) {
      blocks += (t.size() + kBlockTokens - 1) / kBlockTokens;
      longest_encode =
          std::max<std::uint32_t>(longest_encode, std::uint32_t(ctx.size() + t.size()));
      specs.push_back({id, std::move(ctx), std::move(t)});
    };
    std::set<std::tuple<std::uint32_t, int, std::uint32_t>> facts;
    for (const EvalQuestion& q : qs) {
      std::uint32_t len =
          corpus_->header_ids().size() + corpus_->footer_ids().size() + q.query_ids.size();
      for (std::uint32_t f : q.ranked) {
        facts.insert({q.conversation, q.speaker, f});
        len += corpus_->fact_ids(q.conversation, q.speaker, f).size();
      }
      longest_prompt = std::max(longest_prompt, len);
    }
    for (const auto& [c, s, f] : facts) {
      const auto& ids = corpus_->fact_ids(c, s, f);
      for (std::uint32_t w : c_.windows) {
        add_spec(id({c, s, f, kInject, w, 0}), corpus_->context_ids(c, s, f, w), ids);
        if (!recompute_at(w)) continue;
        for (const RecomputeSetting& r : c_.recompute) {
          if (r.kind != RecomputeSetting::Kind::kFirstTokens || r.first_tokens >= ids.size()) {
            continue;
          }
          std::vector<std::int32_t> ctx = corpus_->context_ids(c, s, f, w);
          ctx.insert(ctx.end(), ids.begin(), ids.begin() + r.first_tokens);
          add_spec(id({c, s, f, kTailInject, w, r.first_tokens}), std::move(ctx),
                   {ids.begin() + r.first_tokens, ids.end()});
        }
      }
    }
    if (c_.exactness) {
      std::set<std::tuple<std::uint32_t, int, std::uint32_t>> top1;
      for (const EvalQuestion& q : qs) top1.insert({q.conversation, q.speaker, q.ranked.back()});
      for (const auto& [c, s, f] : top1) {
        add_spec(id({c, s, f, kExact, 0, 0}), corpus_->header_ids(), corpus_->fact_ids(c, s, f));
      }
    }
    const bool ratio = std::any_of(c_.recompute.begin(), c_.recompute.end(), [](auto& r) {
      return r.kind == RecomputeSetting::Kind::kRatio;
    });
    const std::uint64_t scratch_blocks =
        ratio ? std::uint64_t(c_.batch) * k_max_ * 4 + 64 : 0;  // per-question ratio pieces
    const std::uint32_t alive = ratio ? 3 : 1;  // text + plain kv_inject kept for ratio
    const std::uint32_t rows = alive * c_.batch * (longest_prompt + c_.answer_tokens + 2) +
                               2 * 65536u * 4 + longest_encode + 4096;
    const std::uint32_t positions =
        std::max(longest_prompt + c_.answer_tokens, longest_encode) + 64;
    log_("encodes: " + std::to_string(specs.size()) + " (" + std::to_string(blocks) +
         " blocks); longest prompt " + std::to_string(longest_prompt) + " tokens");
    tokens_ = std::make_shared<TextTokenSource>(tok);
    ex_ = std::make_unique<EvalExecutor>(c_, m, std::make_shared<CheckpointWeightLoader>(ckpt),
                                         tokens_, corpus_->header_ids(), corpus_->footer_ids(),
                                         blocks + scratch_blocks + 16, rows, positions);
    result_.machine = ex_->machine();
    ex_->encode(specs);
    if (!c_.kv_reference.empty()) {
      // The same model and encodes with fact KV stored in the reference format.
      FidelityConfig rc = c_;
      rc.kv_dtype = c_.kv_reference;
      ref_ = std::make_unique<EvalExecutor>(rc, m, std::make_shared<CheckpointWeightLoader>(ckpt),
                                            tokens_, corpus_->header_ids(), corpus_->footer_ids(),
                                            blocks + 16, rows, positions);
      ref_->encode(specs);
    }
    log_("encoded in " + seconds_since(t0));

    for (std::size_t b = 0; b < qs.size(); b += c_.batch) {
      const std::size_t e = std::min(qs.size(), b + c_.batch);
      std::vector<const EvalQuestion*> batch;
      for (std::size_t i = b; i < e; ++i) batch.push_back(&qs[i]);
      for (std::uint32_t k : c_.ks) run_batch(batch, k);
      if (c_.exactness) run_exactness(batch);
      log_("questions " + std::to_string(e) + "/" + std::to_string(qs.size()) + " (" +
           seconds_since(t0) + ")");
    }
    finish();
    result_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return std::move(result_);
  }

 private:
  static std::string seconds_since(std::chrono::steady_clock::time_point t0) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return std::to_string(int(s)) + " s";
  }

  bool recompute_at(std::uint32_t w) const {
    return c_.recompute_windows.empty() ||
           std::find(c_.recompute_windows.begin(), c_.recompute_windows.end(), w) !=
               c_.recompute_windows.end();
  }

  FactId id(const FactKey& key) {
    auto [it, fresh] = ids_.try_emplace(key, next_fact_);
    if (fresh) ++next_fact_;
    return it->second;
  }

  /// A computed piece: registered with its ids once.
  FactPiece text_piece(std::uint32_t c, int s, std::uint32_t f, int variant, std::uint32_t n,
                       std::vector<std::int32_t> ids) {
    const FactId fid = id({c, s, f, variant, 0, n});
    FactPiece p{fid, std::uint32_t(ids.size()), false};
    tokens_->set_fact(fid, std::move(ids));
    return p;
  }

  std::vector<std::uint32_t> top(const EvalQuestion& q, std::uint32_t k) const {
    const std::size_t n = std::min<std::size_t>(k, q.ranked.size());
    return {q.ranked.end() - std::ptrdiff_t(n), q.ranked.end()};
  }

  EvalPrompt text_prompt(const EvalQuestion& q, std::uint32_t k) {
    EvalPrompt p{&q, {}, 0};
    for (std::uint32_t f : top(q, k)) {
      p.pieces.push_back(text_piece(q.conversation, q.speaker, f, kText, 0,
                                    corpus_->fact_ids(q.conversation, q.speaker, f)));
    }
    return p;
  }

  EvalPrompt inject_prompt(const EvalQuestion& q, std::uint32_t k, std::uint32_t w,
                           const RecomputeSetting& r) {
    EvalPrompt p{&q, {}, 0};
    for (std::uint32_t f : top(q, k)) {
      const auto& ids = corpus_->fact_ids(q.conversation, q.speaker, f);
      const std::uint32_t n = std::uint32_t(ids.size());
      if (r.kind == RecomputeSetting::Kind::kFirstTokens) {
        const std::uint32_t head = std::min(r.first_tokens, n);
        p.pieces.push_back(text_piece(q.conversation, q.speaker, f, kHeadText, head,
                                      {ids.begin(), ids.begin() + head}));
        p.recomputed += head;
        if (head < n) {
          p.pieces.push_back(
              {id({q.conversation, q.speaker, f, kTailInject, w, head}), n - head, true});
        }
        continue;
      }
      p.pieces.push_back({id({q.conversation, q.speaker, f, kInject, w, 0}), n, true});
    }
    return p;
  }

  /// Ratio recompute: the fraction r of injected tokens whose keys (layer recompute_layer)
  /// deviate most from the text prefill's become computed pieces; the injected runs between
  /// them are encoded as pieces with the fact's earlier tokens as extra context.
  EvalPrompt ratio_prompt(const EvalQuestion& q, std::uint32_t k, std::uint32_t w, double r,
                          RequestId text_req, RequestId inj_req, std::uint32_t prompt_tokens,
                          std::vector<EncodeSpec>& encodes, std::vector<FactId>& scratch) {
    const std::uint32_t layer = std::min(c_.recompute_layer, ex_->layers() - 1);
    const at::Tensor a = ex_->keys(text_req, layer, prompt_tokens).to(at::kFloat);
    const at::Tensor b = ex_->keys(inj_req, layer, prompt_tokens).to(at::kFloat);
    const at::Tensor dev = (a - b).pow(2).sum({1, 2}).to(at::kCPU);  // [prompt_tokens]
    const float* d = dev.data_ptr<float>();
    const auto facts = top(q, k);
    std::uint32_t injected = 0;
    for (std::uint32_t f : facts) {
      injected += corpus_->fact_ids(q.conversation, q.speaker, f).size();
    }
    // Rank injected positions by deviation; the top fraction are recomputed.
    std::vector<std::uint32_t> order(injected);
    for (std::uint32_t i = 0; i < injected; ++i) order[i] = i;
    const std::uint32_t base = ex_->header_tokens();
    std::stable_sort(order.begin(), order.end(),
                     [&](std::uint32_t x, std::uint32_t y) { return d[base + x] > d[base + y]; });
    const std::uint32_t chosen = std::uint32_t(std::lround(r * injected));
    std::vector<bool> recompute(injected, false);
    for (std::uint32_t i = 0; i < chosen; ++i) recompute[order[i]] = true;
    EvalPrompt p{&q, {}, chosen};
    std::uint32_t offset = 0;
    for (std::uint32_t f : facts) {
      const auto& ids = corpus_->fact_ids(q.conversation, q.speaker, f);
      const auto& ctx = corpus_->context_ids(q.conversation, q.speaker, f, w);
      std::uint32_t i = 0;
      while (i < ids.size()) {
        std::uint32_t j = i;
        const bool comp = recompute[offset + i];
        while (j < ids.size() && recompute[offset + j] == comp) ++j;
        const FactId fid = next_fact_++;
        if (comp) {
          tokens_->set_fact(fid, {ids.begin() + i, ids.begin() + j});
          scratch.push_back(fid);
          p.pieces.push_back({fid, j - i, false});
        } else {
          std::vector<std::int32_t> c2 = ctx;
          c2.insert(c2.end(), ids.begin(), ids.begin() + i);
          encodes.push_back({fid, std::move(c2), {ids.begin() + i, ids.begin() + j}});
          scratch.push_back(fid);
          p.pieces.push_back({fid, j - i, true});
        }
        i = j;
      }
      offset += std::uint32_t(ids.size());
    }
    return p;
  }

  /// Scores prompts[i] (text row text_offset + i) against text mode.
  void score(std::uint32_t k, int w, const std::string& setting,
             const std::vector<EvalPrompt>& prompts, const EvalRun& run, const EvalRun& text,
             std::size_t text_offset = 0) {
    Accum& acc = acc_[{k, w, setting}];
    const std::int64_t n = std::int64_t(prompts.size());
    const at::Tensor tl = text.first_logits.narrow(0, std::int64_t(text_offset), n);
    const at::Tensor lt = at::log_softmax(tl, -1);
    const at::Tensor lm = at::log_softmax(run.first_logits, -1);
    const at::Tensor kl = (lt.exp() * (lt - lm)).sum(-1);  // [prompts]
    const at::Tensor a1 = tl.argmax(-1), a2 = run.first_logits.argmax(-1);
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      const EvalQuestion& q = *prompts[i].question;
      FidelityQuestionRow row;
      row.question = q.index;
      row.conversation = corpus_->conversation_id(q.conversation);
      row.category = q.category;
      row.k = k;
      row.w = w;
      row.setting = setting;
      row.first_token = std::int32_t(a2[std::int64_t(i)].item<std::int64_t>());
      row.text_first_token = std::int32_t(a1[std::int64_t(i)].item<std::int64_t>());
      row.kl = std::max(0.0, kl[std::int64_t(i)].item<double>());
      const auto& text_answer = text.answers[text_offset + i];
      row.greedy_equal = run.answers[i] == text_answer;
      row.answer = corpus_->tokenizer().decode(run.answers[i]);
      row.f1 = answer_f1(row.answer, q.answer);
      const std::string text_decoded = corpus_->tokenizer().decode(text_answer);
      const double f1_text = answer_f1(text_decoded, q.answer);
      const auto mode_words = answer_words(row.answer), text_words = answer_words(text_decoded);
      const bool mode_cut = run.answers[i].size() >= c_.answer_tokens,
                 text_cut = text_answer.size() >= c_.answer_tokens;
      row.answer_equal = answers_agree(mode_words, mode_cut, text_words, text_cut);
      row.first_word_equal = answers_agree(mode_words, mode_cut, text_words, text_cut, 1);
      row.words_equal =
          answers_agree(mode_words, mode_cut, text_words, text_cut, c_.agreement_words);
      acc.n++;
      acc.top1 += row.first_token == row.text_first_token;
      acc.greedy += row.greedy_equal;
      acc.answer += row.answer_equal;
      acc.first_word += row.first_word_equal;
      acc.words += row.words_equal;
      acc.kl.push_back(row.kl);
      acc.f1 += row.f1;
      acc.f1_text += f1_text;
      acc.ttft += run.ttft_ms[i];
      acc.computed += run.computed[i];
      acc.recomputed += prompts[i].recomputed;
      result_.rows.push_back(std::move(row));
    }
  }

  void run_batch(const std::vector<const EvalQuestion*>& batch, std::uint32_t k) {
    const bool ratio = std::any_of(c_.recompute.begin(), c_.recompute.end(), [](auto& r) {
      return r.kind == RecomputeSetting::Kind::kRatio;
    });
    std::vector<EvalPrompt> text_prompts;
    for (const EvalQuestion* q : batch) text_prompts.push_back(text_prompt(*q, k));
    const EvalRun text = ex_->run(text_prompts, ratio);
    score(k, -1, "text", text_prompts, text, text);
    for (std::uint32_t w : c_.windows) {
      const bool rec = recompute_at(w);
      std::vector<EvalPrompt> plain;
      for (const EvalQuestion* q : batch) plain.push_back(inject_prompt(*q, k, w, {}));
      const EvalRun inj = ex_->run(plain, ratio && rec);
      score(k, int(w), "none", plain, inj, text);
      if (ref_) score(k, int(w), "vs_" + c_.kv_reference, plain, inj, ref_->run(plain, false));
      if (!rec) continue;
      for (const RecomputeSetting& r : c_.recompute) {
        if (r.kind == RecomputeSetting::Kind::kFirstTokens) {
          std::vector<EvalPrompt> prompts;
          for (const EvalQuestion* q : batch) prompts.push_back(inject_prompt(*q, k, w, r));
          score(k, int(w), r.label(), prompts, ex_->run(prompts, false), text);
          continue;
        }
        // Ratio: per-question pieces, in chunks whose encodes fit the pool's free blocks.
        std::size_t first = 0;
        while (first < batch.size()) {
          std::vector<EvalPrompt> prompts;
          std::vector<EncodeSpec> encodes;
          std::vector<FactId> scratch;
          std::int64_t blocks = 0;
          std::size_t i = first;
          for (; i < batch.size(); ++i) {
            const std::size_t before = encodes.size(), scratch_before = scratch.size();
            EvalPrompt p = ratio_prompt(*batch[i], k, w, r.ratio, text.requests[i], inj.requests[i],
                                        text.prompt_tokens[i], encodes, scratch);
            std::int64_t need = 0;
            for (std::size_t j = before; j < encodes.size(); ++j) {
              need += std::int64_t((encodes[j].tokens.size() + kBlockTokens - 1) / kBlockTokens);
            }
            if (i > first && blocks + need > ex_->free_blocks()) {
              for (std::size_t j = scratch_before; j < scratch.size(); ++j) {
                tokens_->forget_fact(scratch[j]);
              }
              scratch.resize(scratch_before);
              encodes.resize(before);
              break;  // this question starts the next chunk
            }
            blocks += need;
            prompts.push_back(std::move(p));
          }
          ex_->encode(encodes);
          score(k, int(w), r.label(), prompts, ex_->run(prompts, false), text, first);
          std::vector<FactId> pooled;
          for (const auto& e : encodes) pooled.push_back(e.id);
          ex_->evict(pooled);
          for (FactId f : scratch) tokens_->forget_fact(f);
          first = i;
        }
      }
      if (ratio) ex_->release(inj.requests);
    }
    if (ratio) ex_->release(text.requests);
  }

  void run_exactness(const std::vector<const EvalQuestion*>& batch) {
    std::vector<EvalPrompt> text, inj;
    for (const EvalQuestion* q : batch) {
      text.push_back(text_prompt(*q, 1));
      const std::uint32_t f = q->ranked.back();
      const auto n = std::uint32_t(corpus_->fact_ids(q->conversation, q->speaker, f).size());
      inj.push_back({q, {{id({q->conversation, q->speaker, f, kExact, 0, 0}), n, true}}, 0});
    }
    const EvalRun t = ex_->run(text, false), x = ex_->run(inj, false);
    ExactnessResult& e = result_.exactness;
    const at::Tensor lt = at::log_softmax(t.first_logits, -1);
    const at::Tensor lx = at::log_softmax(x.first_logits, -1);
    const at::Tensor kl = (lt.exp() * (lt - lx)).sum(-1);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const at::Tensor a = x.first_logits[std::int64_t(i)], b = t.first_logits[std::int64_t(i)];
      const double diff = (a - b).abs().max().item<double>();
      const double scale = b.abs().max().item<double>();
      e.questions++;
      e.top1_equal += a.argmax().item<std::int64_t>() == b.argmax().item<std::int64_t>();
      e.max_abs_logit_diff = std::max(e.max_abs_logit_diff, diff);
      e.max_rel_logit_diff = std::max(e.max_rel_logit_diff, diff / std::max(scale, 1e-30));
      e.max_kl = std::max(e.max_kl, kl[std::int64_t(i)].item<double>());
    }
  }

  void check_tokenization() {
    const auto& qs = corpus_->questions();
    for (const EvalQuestion& q : qs) {
      std::vector<std::int32_t> pieces = corpus_->header_ids();
      for (std::uint32_t f : top(q, k_max_ ? k_max_ : c_.ks.back())) {
        const auto& ids = corpus_->fact_ids(q.conversation, q.speaker, f);
        pieces.insert(pieces.end(), ids.begin(), ids.end());
      }
      pieces.insert(pieces.end(), corpus_->footer_ids().begin(), corpus_->footer_ids().end());
      pieces.insert(pieces.end(), q.query_ids.begin(), q.query_ids.end());
      if (corpus_->tokenizer().encode(corpus_->prompt_text(q, c_.ks.back())) != pieces) {
        result_.piece_tokenization_mismatches++;
      }
    }
    if (result_.piece_tokenization_mismatches) {
      log_("warning: " + std::to_string(result_.piece_tokenization_mismatches) +
           " prompts tokenize differently whole than piece by piece");
    }
  }

  void finish() {
    for (const auto& [key, a] : acc_) {
      const auto& [k, w, setting] = key;
      FidelitySummaryRow r;
      r.k = k;
      r.w = w;
      r.setting = setting;
      r.questions = a.n;
      const double n = std::max<double>(a.n, 1);
      r.top1_agreement = a.top1 / n;
      r.greedy_agreement = a.greedy / n;
      r.answer_agreement = a.answer / n;
      r.first_word_agreement = a.first_word / n;
      r.words_agreement = a.words / n;
      double kl = 0;
      for (double x : a.kl) kl += x;
      r.kl_mean = kl / n;
      r.kl_p90 = percentile(a.kl, 0.9);
      r.f1 = a.f1 / n;
      r.f1_text = a.f1_text / n;
      r.ttft_ms = a.ttft / n;
      r.computed_tokens = a.computed / n;
      r.recomputed_tokens = a.recomputed / n;
      result_.summary.push_back(r);
    }
  }

  FidelityConfig c_;
  FidelityLog log_;
  FidelityResult result_;
  std::unique_ptr<FidelityCorpus> corpus_;
  std::shared_ptr<TextTokenSource> tokens_;
  std::unique_ptr<EvalExecutor> ex_;
  std::unique_ptr<EvalExecutor> ref_;  // fact KV in kv_reference's format (or none)
  std::map<FactKey, FactId> ids_;
  FactId next_fact_ = 1;
  std::uint32_t k_max_ = 0;
  std::map<std::tuple<std::uint32_t, int, std::string>, Accum> acc_;
};

}  // namespace

FidelityResult run_fidelity(const FidelityConfig& config, const FidelityLog& log) {
  return Runner(config, log).run();
}

std::string RecomputeSetting::label() const {
  char buf[64];
  switch (kind) {
    case Kind::kNone:
      return "none";
    case Kind::kFirstTokens:
      return "first_tokens=" + std::to_string(first_tokens);
    case Kind::kRatio:
      std::snprintf(buf, sizeof buf, "ratio=%g", ratio);
      return buf;
  }
  return "?";
}

}  // namespace inferscale
