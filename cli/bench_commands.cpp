// `inferscale bench executor`: the real executor's TTFT, TPOT and throughput, text vs kv_inject.
// Compiled only where the libtorch executor is built (sim/CMakeLists.txt); registers itself.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "cli/cuda_check.h"
#include "executor/gpu/executor_bench.h"
#include "executor/gpu/model_presets.h"
#include "traces/error.h"

namespace inferscale::cli {

namespace {

struct BenchArgs {
  std::string model = "llama-3.1-8b";
  std::string device = "cuda";
  std::string dtype;  // default: bf16 on cuda, f32 on cpu
  std::string rope = "pre_rope";
  std::string modes = "text,kv_inject";
  std::vector<std::uint32_t> batches = {1, 16, 64};
  std::vector<std::uint32_t> ks = {0, 10, 25, 50};
  std::string out = "bench/results/executor_h200.json";
  // The executor's switches under A/B (validated by CLI11: a bad value exits with status 2).
  std::string split_kv = "on", cuda_graphs = "on", pdl = "on";
  std::string blas = blas_library_name(BlasPolicy{}.library);
  ExecutorBenchOptions o;
};

void write_atomically(const std::string& path, const std::string& text) {
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    if (!f) throw InputError("--out", "cannot write " + path);
    f << text << "\n";
    if (!f.flush()) throw InputError("--out", "cannot write " + path);
  }
  std::filesystem::rename(tmp, path);
}

int run_bench(const BenchArgs& a, const std::string& command) {
  ExecutorBenchOptions o = a.o;
  o.model = parse_model_spec(a.model, "--model");
  if (a.device != "cuda" && a.device != "cpu") throw InputError("--device", "expected cuda or cpu");
  if (a.device == "cuda") require_cuda("--device");
  o.device = a.device;
  const std::string dtype = a.dtype.empty() ? (a.device == "cuda" ? "bf16" : "f32") : a.dtype;
  if (dtype == "bf16") {
    o.dtype = DType::kBF16;
  } else if (dtype == "f32") {
    o.dtype = DType::kF32;
  } else if (dtype == "f16") {
    o.dtype = DType::kF16;
  } else {
    throw InputError("--dtype", "expected bf16, f32 or f16, got '" + dtype + "'");
  }
  if (a.rope != "pre_rope" && a.rope != "delta") {
    throw InputError("--rope", "expected pre_rope or delta, got '" + a.rope + "'");
  }
  o.rope = a.rope == "pre_rope" ? RopeMode::kPreRope : RopeMode::kDelta;
  o.modes.clear();
  std::stringstream ms(a.modes);
  for (std::string m; std::getline(ms, m, ',');) {
    if (m != "text" && m != "kv_inject") {
      throw InputError("--modes", "expected text and/or kv_inject, got '" + m + "'");
    }
    o.modes.push_back(m);
  }
  if (a.batches.empty() || a.ks.empty() || o.modes.empty()) {
    throw InputError("--batch/--k/--modes", "each needs at least one value");
  }
  for (std::uint32_t b : a.batches) {
    if (b == 0) throw InputError("--batch", "batch sizes must be positive");
  }
  if (o.query == 0) throw InputError("--query", "the query needs at least one token");
  o.batches = a.batches;
  o.ks = a.ks;
  o.split_kv.enabled = a.split_kv == "on";
  o.cuda_graphs.enabled = a.cuda_graphs == "on";
  o.programmatic_launch = a.pdl == "on";
  for (const BlasLibrary l :
       {BlasLibrary::kCublas, BlasLibrary::kCublasLt, BlasLibrary::kFewRowsLt}) {
    if (a.blas == blas_library_name(l)) o.blas.library = l;
  }
  o.command = command;
  const nlohmann::json doc = run_executor_bench(
      o, [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
  write_atomically(a.out, doc.dump(2));
  std::printf("%s", executor_bench_table(doc).c_str());
  std::printf("wrote %s (%s)\n", a.out.c_str(), doc["machine"].get<std::string>().c_str());
  return 0;
}

void add_bench_commands(CLI::App& app, Action& action) {
  auto* bench = app.add_subcommand("bench", "Benchmarks of the real executor");
  bench->require_subcommand(1);
  auto* cmd = bench->add_subcommand(
      "executor", "TTFT, TPOT and throughput of text vs kv_inject on a random-weight model");
  auto args = std::make_shared<BenchArgs>();
  cmd->add_option("--model", args->model,
                  "llama-3.1-8b, mistral-7b, qwen2.5-7b, smollm2-135m, or "
                  "custom:layers=..,hidden=..,heads=..,kv_heads=..,head_dim=..,ffn=..,vocab=..")
      ->capture_default_str();
  cmd->add_option("--device", args->device, "cuda or cpu")->capture_default_str();
  cmd->add_option("--dtype", args->dtype, "bf16 (cuda default), f32 (cpu default) or f16");
  cmd->add_option("--header", args->o.header, "header tokens")->capture_default_str();
  cmd->add_option("--fact", args->o.fact, "tokens per fact")->capture_default_str();
  cmd->add_option("--footer", args->o.footer, "footer tokens")->capture_default_str();
  cmd->add_option("--query", args->o.query, "query tokens")->capture_default_str();
  cmd->add_option("--output", args->o.output, "output tokens per request")->capture_default_str();
  cmd->add_option("--batch", args->batches, "batch sizes, comma separated")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--k", args->ks, "facts per request, comma separated")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--modes", args->modes, "text,kv_inject")->capture_default_str();
  cmd->add_option("--rope", args->rope, "pre_rope or delta")->capture_default_str();
  cmd->add_option("--reps", args->o.reps, "measured repetitions (median)")->capture_default_str();
  cmd->add_option("--warmup", args->o.warmup, "unmeasured repetitions first")
      ->capture_default_str();
  cmd->add_option("--seed", args->o.seed, "seed of the random weights")->capture_default_str();
  cmd->add_option("--out", args->out, "results JSON")->capture_default_str();
  const auto on_off = CLI::IsMember({"on", "off"});
  cmd->add_option("--split-kv", args->split_kv,
                  "split-KV attention for short queries over long contexts")
      ->check(on_off)
      ->capture_default_str();
  cmd->add_option("--split-kv-min-tiles", args->o.split_kv.min_chunk_tiles,
                  "shortest split-KV key split, in 64-key tiles")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--cuda-graphs", args->cuda_graphs, "recurring step shapes as CUDA graphs")
      ->check(on_off)
      ->capture_default_str();
  cmd->add_option("--blas", args->blas,
                  "BLAS library of the matrix products (cublaslt_few_rows: cuBLASLt for products "
                  "of at most 64 rows, cuBLAS for the rest)")
      ->check(CLI::IsMember({"cublas", "cublaslt", "cublaslt_few_rows"}))
      ->capture_default_str();
  cmd->add_option("--pdl", args->pdl, "programmatic dependent launch of the layer's own kernels")
      ->check(on_off)
      ->capture_default_str();
  cmd->callback([&action, args, &app] {
    std::string command = "inferscale";
    for (const auto* sub : app.get_subcommands()) {
      command += " " + sub->get_name();
      for (const auto* s2 : sub->get_subcommands()) command += " " + s2->get_name();
    }
    command += " --model " + args->model + " --device " + args->device;
    auto list = [](const std::vector<std::uint32_t>& v) {
      std::string s;
      for (auto x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
      return s;
    };
    command += " --header " + std::to_string(args->o.header) + " --fact " +
               std::to_string(args->o.fact) + " --footer " + std::to_string(args->o.footer) +
               " --query " + std::to_string(args->o.query) + " --output " +
               std::to_string(args->o.output) + " --batch " + list(args->batches) + " --k " +
               list(args->ks) + " --modes " + args->modes + " --rope " + args->rope + " --reps " +
               std::to_string(args->o.reps) + " --warmup " + std::to_string(args->o.warmup) +
               " --seed " + std::to_string(args->o.seed) + " --split-kv " + args->split_kv +
               " --split-kv-min-tiles " + std::to_string(args->o.split_kv.min_chunk_tiles) +
               " --cuda-graphs " + args->cuda_graphs + " --blas " + args->blas + " --pdl " +
               args->pdl + " --out " + args->out;
    action = [args, command] { return run_bench(*args, command); };
  });
}

[[maybe_unused]] const bool kRegistered = register_command_group(&add_bench_commands);

}  // namespace

}  // namespace inferscale::cli
