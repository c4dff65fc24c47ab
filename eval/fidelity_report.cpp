// Outputs of the fidelity evaluation: CSVs, exactness JSON, the Markdown summary; answer F1.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "eval/fidelity.h"
#include "traces/error.h"

namespace inferscale {

namespace {

std::vector<std::string> answer_tokens(const std::string& s) {
  std::string clean;
  for (unsigned char ch : s) {
    if (std::ispunct(ch)) continue;
    clean += char(std::tolower(ch));
  }
  std::vector<std::string> out;
  std::istringstream in(clean);
  for (std::string w; in >> w;) {
    if (w != "a" && w != "an" && w != "the") out.push_back(w);
  }
  return out;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  const auto tmp = path.string() + ".tmp";
  {
    std::ofstream f(tmp);
    if (!f) throw InputError(path.string(), "cannot write");
    f << text;
    if (!f.flush()) throw InputError(path.string(), "cannot write");
  }
  std::filesystem::rename(tmp, path);
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

std::vector<std::string> answer_words(const std::string& answer) {
  std::size_t i = 0;
  for (;;) {
    while (i < answer.size() && std::isspace(static_cast<unsigned char>(answer[i]))) ++i;
    if (i < answer.size() && (answer[i] == '-' || answer[i] == '*')) {
      ++i;
    } else if (answer.compare(i, 3, "\xe2\x80\xa2") == 0) {  // a bullet
      i += 3;
    } else {
      std::size_t j = i;
      while (j < answer.size() && std::isdigit(static_cast<unsigned char>(answer[j]))) ++j;
      if (j == i || j >= answer.size() || (answer[j] != '.' && answer[j] != ')') ||
          (j + 1 < answer.size() && !std::isspace(static_cast<unsigned char>(answer[j + 1])))) {
        break;
      }
      i = j + 1;
    }
  }
  std::string clean;
  for (std::size_t j = i; j < answer.size(); ++j) {
    const unsigned char ch = static_cast<unsigned char>(answer[j]);
    if (!std::ispunct(ch)) clean += char(std::tolower(ch));
  }
  std::vector<std::string> out;
  std::istringstream in(clean);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

bool answers_agree(const std::vector<std::string>& a, bool a_cut, const std::vector<std::string>& b,
                   bool b_cut, std::size_t n) {
  const std::size_t limit = n > 0 ? n : a.size() + b.size();
  // The words each answer certainly has in full: a cut answer's last word may be cut mid-word.
  const auto certain = [&](const std::vector<std::string>& w, bool cut) {
    return std::min(cut && !w.empty() ? w.size() - 1 : w.size(), limit);
  };
  const std::size_t ka = certain(a, a_cut), kb = certain(b, b_cut);
  // An answer that ended by itself with fewer words than the other certainly has: they differ.
  if ((!a_cut && ka < kb) || (!b_cut && kb < ka)) return false;
  const std::size_t m = std::min(ka, kb);
  return std::equal(a.begin(), a.begin() + std::ptrdiff_t(m), b.begin());
}

double answer_f1(const std::string& prediction, const std::string& gold) {
  const auto p = answer_tokens(prediction), g = answer_tokens(gold);
  if (p.empty() || g.empty()) return p.empty() && g.empty() ? 1.0 : 0.0;
  std::map<std::string, int> counts;
  for (const auto& t : g) counts[t]++;
  int common = 0;
  for (const auto& t : p) {
    if (counts[t]-- > 0) ++common;
  }
  if (common == 0) return 0.0;
  const double precision = double(common) / double(p.size()),
               recall = double(common) / double(g.size());
  return 2 * precision * recall / (precision + recall);
}

std::string fidelity_table(const FidelityResult& r) {
  std::ostringstream o;
  o << "| k | w | recompute | questions | top-1 agree | KL mean | KL p90 | greedy agree | "
       "answer agree | first word agree | first "
    << r.config.agreement_words
    << " words agree | F1 | F1 text | TTFT ms | prefill tok | recomputed tok |\n"
    << "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  auto rows = r.summary;
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return std::tie(a.k, a.w, a.setting) < std::tie(b.k, b.w, b.setting);
  });
  for (const auto& s : rows) {
    o << "| " << s.k << " | " << (s.w < 0 ? std::string("-") : std::to_string(s.w)) << " | "
      << (s.setting == "text" ? std::string("text mode") : s.setting) << " | " << s.questions
      << " | " << fmt("%.3f", s.top1_agreement) << " | " << fmt("%.4f", s.kl_mean) << " | "
      << fmt("%.4f", s.kl_p90) << " | " << fmt("%.3f", s.greedy_agreement) << " | "
      << fmt("%.3f", s.answer_agreement) << " | " << fmt("%.3f", s.first_word_agreement) << " | "
      << fmt("%.3f", s.words_agreement) << " | " << fmt("%.3f", s.f1) << " | "
      << fmt("%.3f", s.f1_text) << " | " << fmt("%.2f", s.ttft_ms) << " | "
      << fmt("%.0f", s.computed_tokens) << " | " << fmt("%.1f", s.recomputed_tokens) << " |\n";
  }
  if (!r.config.kv_reference.empty()) {
    o << "\nRows vs_" << r.config.kv_reference << ": kv_inject against kv_inject with fact KV in "
      << r.config.kv_reference << " (KL of that run's distribution to this one's; its answers in "
      << "place of text mode's, its F1 under F1 text).\n";
  }
  const ExactnessResult& e = r.exactness;
  if (e.questions > 0) {
    o << "\nExactness (k = 1, fact encoded after the header it follows): " << e.top1_equal << "/"
      << e.questions << " first tokens equal (" << fmt("%.1f", 100 * e.agreement())
      << " %), max |logit diff| " << fmt("%.3g", e.max_abs_logit_diff) << " ("
      << fmt("%.3g", e.max_rel_logit_diff) << " of the largest logit), max KL "
      << fmt("%.3g", e.max_kl) << "\n";
  }
  return o.str();
}

void write_fidelity_outputs(const FidelityResult& r, const std::string& dir) {
  std::filesystem::create_directories(dir);
  const std::filesystem::path d(dir);
  std::ostringstream s;
  s << "k,w,setting,questions,top1_agreement,kl_mean,kl_p90,greedy_agreement,f1,f1_text,"
       "ttft_ms,computed_tokens,recomputed_tokens,answer_agreement,first_word_agreement,"
       "words_agreement\n";
  for (const auto& x : r.summary) {
    s << x.k << "," << x.w << "," << x.setting << "," << x.questions << ","
      << fmt("%.6f", x.top1_agreement) << "," << fmt("%.6g", x.kl_mean) << ","
      << fmt("%.6g", x.kl_p90) << "," << fmt("%.6f", x.greedy_agreement) << "," << fmt("%.6f", x.f1)
      << "," << fmt("%.6f", x.f1_text) << "," << fmt("%.4f", x.ttft_ms) << ","
      << fmt("%.2f", x.computed_tokens) << "," << fmt("%.2f", x.recomputed_tokens) << ","
      << fmt("%.6f", x.answer_agreement) << "," << fmt("%.6f", x.first_word_agreement) << ","
      << fmt("%.6f", x.words_agreement) << "\n";
  }
  write_file(d / "fidelity.csv", s.str());
  std::ostringstream q;
  q << "question,conversation,category,k,w,setting,first_token,text_first_token,kl,"
       "greedy_equal,f1,answer,answer_equal,first_word_equal,words_equal\n";
  for (const auto& x : r.rows) {
    q << x.question << "," << x.conversation << "," << x.category << "," << x.k << "," << x.w << ","
      << x.setting << "," << x.first_token << "," << x.text_first_token << "," << fmt("%.6g", x.kl)
      << "," << (x.greedy_equal ? 1 : 0) << "," << fmt("%.4f", x.f1) << "," << csv_field(x.answer)
      << "," << (x.answer_equal ? 1 : 0) << "," << (x.first_word_equal ? 1 : 0) << ","
      << (x.words_equal ? 1 : 0) << "\n";
  }
  write_file(d / "fidelity_questions.csv", q.str());
  nlohmann::json j;
  j["config"] = r.config.source;
  j["model"] = r.model_description;
  j["machine"] = r.machine;
  j["device"] = r.config.device;
  j["dtype"] = r.config.dtype;
  j["kv_dtype"] = r.config.kv_dtype.empty() ? r.config.dtype : r.config.kv_dtype;
  j["agreement_words"] = r.config.agreement_words;
  j["questions"] = r.questions;
  j["seconds"] = r.seconds;
  j["piece_tokenization_mismatches"] = r.piece_tokenization_mismatches;
  j["exactness"] = {{"questions", r.exactness.questions},
                    {"top1_equal", r.exactness.top1_equal},
                    {"agreement", r.exactness.agreement()},
                    {"max_abs_logit_diff", r.exactness.max_abs_logit_diff},
                    {"max_rel_logit_diff", r.exactness.max_rel_logit_diff},
                    {"max_kl", r.exactness.max_kl}};
  write_file(d / "summary.json", j.dump(2) + "\n");
  write_file(d / "summary.md",
             "# Fidelity: " + r.model_description + " on " + r.machine + " (" + r.config.dtype +
                 (r.config.kv_dtype.empty() ? "" : ", fact KV " + r.config.kv_dtype) + ")\n\n" +
                 fidelity_table(r));
}

}  // namespace inferscale
