// `inferscale eval`: the fidelity evaluation on LoCoMo (eval/fidelity.h), and two tools the
// reference checks use: `eval tokenize` (token ids of texts) and `eval logits` (next-token
// logits of prompts). Compiled only where the libtorch executor is built; registers itself.
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>

#include "cli/commands.h"
#include "cli/eval_config.h"
#include "eval/fidelity.h"
#include "executor/gpu/checkpoint_loader.h"
#include "executor/gpu/gpu_executor.h"
#include "executor/tokenizer/bpe_tokenizer.h"
#include "executor/weights/gguf.h"
#include "traces/error.h"
#include "traces/locomo.h"

namespace inferscale::cli {

namespace {

struct FidelityArgs {
  std::string config, out, device, dtype, kv_dtype, kv_reference;
  std::uint32_t questions = 0;
  bool questions_set = false;
};

struct ToolArgs {
  std::string model, in, out;
};

BpeTokenizer model_tokenizer(const std::string& model) {
  return BpeTokenizer::from_gguf(GgufFile(model));
}

/// Reads JSON Lines of {"text": ...}; InputError with file:line on a bad line.
std::vector<std::string> read_texts(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "cannot open");
  std::vector<std::string> out;
  std::string line;
  for (long n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    try {
      const auto j = nlohmann::json::parse(line);
      out.push_back(j.at("text").get<std::string>());
    } catch (const nlohmann::json::exception&) {
      throw InputError(position(path, n), "expected a JSON object with a string \"text\"");
    }
  }
  return out;
}

int run_fidelity_command(const FidelityArgs& a) {
  FidelityConfig c = load_fidelity_config(a.config);
  // LoCoMo: `data:` alone when given, else the usual search (README.md, "Data").
  c.data = find_locomo(locomo_search(c.data), c.data_where);
  if (!a.out.empty()) c.out = a.out;
  if (!a.device.empty()) {
    if (a.device != "cpu" && a.device != "cuda")
      throw InputError("--device", "expected cpu or cuda");
    c.device = a.device;
  }
  if (!a.dtype.empty()) {
    if (a.dtype != "f32" && a.dtype != "bf16" && a.dtype != "f16") {
      throw InputError("--dtype", "expected f32, bf16 or f16");
    }
    c.dtype = a.dtype;
  }
  const auto kv_format = [](const char* flag, const std::string& v) {
    const auto& f = fact_kv_formats();
    if (std::find(f.begin(), f.end(), v) == f.end()) {
      throw InputError(flag, "expected bf16, fp8 or int8");
    }
    return v;
  };
  if (!a.kv_dtype.empty()) c.kv_dtype = kv_format("--kv-dtype", a.kv_dtype);
  if (!a.kv_reference.empty()) c.kv_reference = kv_format("--kv-reference", a.kv_reference);
  if (a.questions_set) c.questions = a.questions;
  const FidelityResult r =
      run_fidelity(c, [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
  write_fidelity_outputs(r, c.out);
  std::printf("%s", fidelity_table(r).c_str());
  std::printf("wrote %s/fidelity.csv (%u questions, %.0f s on %s)\n", c.out.c_str(), r.questions,
              r.seconds, r.machine.c_str());
  return 0;
}

int run_tokenize(const ToolArgs& a) {
  const BpeTokenizer tok = model_tokenizer(a.model);
  std::ofstream out(a.out);
  if (!out) throw InputError("--out", "cannot write " + a.out);
  for (const std::string& t : read_texts(a.in)) {
    out << nlohmann::json{{"ids", tok.encode(t)}}.dump() << "\n";
  }
  return 0;
}

int run_logits(const ToolArgs& a) {
  c10::InferenceMode guard;
  const auto ckpt = std::shared_ptr<const LlamaCheckpoint>(open_checkpoint(a.model));
  const BpeTokenizer tok = model_tokenizer(a.model);
  GpuExecutor ex(checkpoint_cpu_options(ckpt, 8192));
  std::ofstream out(a.out, std::ios::binary);
  if (!out) throw InputError("--out", "cannot write " + a.out);
  for (const std::string& t : read_texts(a.in)) {
    const at::Tensor logits = ex.prefill_logits(tok.encode(t)).contiguous();
    out.write(reinterpret_cast<const char*>(logits.data_ptr<float>()),
              std::streamsize(logits.numel() * sizeof(float)));
  }
  return 0;
}

void add_eval_commands(CLI::App& app, Action& action) {
  auto* eval = app.add_subcommand("eval", "Fidelity of kv_inject against text on real models");
  eval->require_subcommand(1);
  auto* fid = eval->add_subcommand(
      "fidelity", "LoCoMo: text vs kv_inject per (k, w, recompute) with a real model");
  auto fa = std::make_shared<FidelityArgs>();
  fid->add_option("config", fa->config, "YAML config (configs/eval/*.yaml)")->required();
  fid->add_option("--out", fa->out, "output directory (overrides `out`)");
  fid->add_option("--device", fa->device, "cpu or cuda (overrides `device`)");
  fid->add_option("--dtype", fa->dtype, "f32, bf16 or f16 (overrides `dtype`)");
  fid->add_option("--kv-dtype", fa->kv_dtype,
                  "bf16, fp8 or int8: the format fact KV is stored in (overrides `kv_dtype`)");
  fid->add_option("--kv-reference", fa->kv_reference,
                  "bf16, fp8 or int8: also score kv_inject against kv_inject with fact KV in "
                  "this format (overrides `kv_reference`)");
  auto* qopt = fid->add_option("--questions", fa->questions,
                               "evaluate the first n answerable questions (0: all)");
  fid->callback([&action, fa, qopt] {
    fa->questions_set = qopt->count() > 0;
    action = [fa] { return run_fidelity_command(*fa); };
  });

  auto* tok = eval->add_subcommand("tokenize", "Token ids of texts (JSON Lines {\"text\"})");
  auto ta = std::make_shared<ToolArgs>();
  tok->add_option("--model", ta->model, "GGUF file")->required();
  tok->add_option("--in", ta->in, "JSON Lines of {\"text\": ...}")->required();
  tok->add_option("--out", ta->out, "JSON Lines of {\"ids\": [...]}")->required();
  tok->callback([&action, ta] { action = [ta] { return run_tokenize(*ta); }; });

  auto* lg = eval->add_subcommand(
      "logits", "Next-token logits (fp32, CPU) after each text, as raw little-endian float32");
  auto la = std::make_shared<ToolArgs>();
  lg->add_option("--model", la->model, "GGUF file")->required();
  lg->add_option("--in", la->in, "JSON Lines of {\"text\": ...}")->required();
  lg->add_option("--out", la->out, "raw float32 [texts, vocab]")->required();
  lg->callback([&action, la] { action = [la] { return run_logits(*la); }; });
}

[[maybe_unused]] const bool kRegistered = register_command_group(&add_eval_commands);

}  // namespace

}  // namespace inferscale::cli
