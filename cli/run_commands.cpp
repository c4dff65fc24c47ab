// `inferscale run` and `inferscale validate`: YAML experiments.
#include <cstdio>
#include <memory>

#include <yaml-cpp/yaml.h>

#include "cli/commands.h"
#include "cli/ranks.h"
#include "plan/plan_config.h"
#include "sim/config/experiment.h"
#include "sim/runner.h"
#include "traces/error.h"

namespace inferscale::cli {

namespace {

/// A plan file is a map with a top-level `plan:` key (docs/plan.md); anything else, unreadable
/// YAML included, is read as an experiment (whose loader reports the error's place).
bool is_plan_file(const std::string& file) {
  try {
    const YAML::Node top = YAML::LoadFile(file);
    return top.IsMap() && top["plan"];
  } catch (const YAML::Exception&) {
    return false;
  }
}

/// `inferscale validate PLAN.yaml`: the plan's checks (load_plan: the search keys against the
/// base experiment, the SLO metrics, the load), then what the plan would search.
int validate_plan(const std::string& file, const std::vector<std::string>& sets) {
  if (!sets.empty()) {
    throw InputError("--set", "a plan file takes no --set (its search space names the keys)");
  }
  const plan::PlanConfig p = plan::load_plan(file);
  std::uint64_t candidates = 1;
  for (const plan::SearchAxis& a : p.axes) candidates *= a.values.size();
  std::printf(
      "plan %s: ok (%llu users, %.2f requests/s at the sizing peak, %zu SLO targets, %llu "
      "candidates over %zu search keys, objective %s)\n",
      p.name.c_str(), static_cast<unsigned long long>(p.load.users), p.load.sizing_rate_per_s(),
      p.slo.size(), static_cast<unsigned long long>(candidates), p.axes.size(),
      plan::to_string(p.objective));
  return 0;
}

}  // namespace

void add_run_commands(CLI::App& app, Action& action) {
  struct RunArgs {
    std::string config;
    std::vector<std::string> sets;
    std::vector<std::string> runs;
    std::string out;
    bool no_progress = false;
  };
  auto args = std::make_shared<RunArgs>();
  auto* run = app.add_subcommand("run", "Run an experiment (every named run of a YAML config)");
  run->add_option("CONFIG", args->config, "experiment YAML")->required()->check(CLI::ExistingFile);
  run->add_option("--set", args->sets, "override a key: serving.k=20 (or runs.<name>.key=value)");
  run->add_option("--runs", args->runs, "run only these named runs")->delimiter(',');
  run->add_option("--out", args->out, "results directory (default: output.dir of the config)");
  run->add_flag("--no-progress", args->no_progress, "no progress bar on stderr");
  run->callback([&action, args] {
    action = [args] {
      const ExperimentConfig exp = load_experiment(args->config, args->sets);
      RunnerOptions opts;
      opts.only_runs = args->runs;
      opts.out_dir = args->out;
      opts.progress = !args->no_progress;
      try {
        const auto outcomes = run_on_ranks(exp, opts);  // none on MPI ranks other than 0
        if (outcomes) print_comparison(*outcomes, stdout);
      } catch (const ExecutorFailure& e) {
        // Not bad input: the executor went away (status 1); what was measured is kept.
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
      }
      return 0;
    };
  });

  auto vargs = std::make_shared<RunArgs>();
  auto* validate = app.add_subcommand(
      "validate", "Check an experiment config (or a plan file) without running it");
  validate->add_option("CONFIG", vargs->config, "experiment or plan YAML")
      ->required()
      ->check(CLI::ExistingFile);
  validate->add_option("--set", vargs->sets, "override a key: serving.k=20");
  validate->callback([&action, vargs] {
    action = [vargs] {
      if (is_plan_file(vargs->config)) return validate_plan(vargs->config, vargs->sets);
      const ExperimentConfig exp = load_experiment(vargs->config, vargs->sets);
      validate_experiment(exp);
      for (const auto& r : exp.runs) {
        std::printf(
            "%s/%s: ok (%s, %s on %u x %s, k=%u, GPU store %.1f GiB, request KV %.1f GiB)\n",
            exp.name.c_str(), r.name.c_str(), to_string(r.serving.mode), r.model.name.c_str(),
            r.replicas, r.gpu.name.c_str(), r.serving.k,
            double(r.store.gpu.capacity_bytes) / double(1ull << 30),
            double(r.request_kv_bytes()) / double(1ull << 30));
      }
      return 0;
    };
  });
}

}  // namespace inferscale::cli
