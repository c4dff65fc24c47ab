// `inferscale plan`: capacity planning over a search space (docs/plan.md).
#include <chrono>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/ranks.h"
#include "plan/plan_config.h"
#include "plan/planner.h"
#include "plan/report.h"
#include "traces/error.h"

namespace inferscale::cli {

namespace {

struct PlanArgs {
  std::string file;
  unsigned jobs = 0;
  bool resume = false;
  bool no_early_stop = false;
  std::vector<std::uint64_t> users;
  std::string out;
  bool quiet = false;
};

std::string curve_row(const plan::PlanConfig& p, const plan::PlanOutcome& o, std::uint64_t users,
                      const std::string& mode) {
  const long b = plan::best_candidate(p, o, mode);
  std::string row = std::to_string(users) + "," + (mode.empty() ? "overall" : mode) + ",";
  if (b < 0) return row + ",,,,\n";
  const auto& r = o.results[std::size_t(b)];
  char buf[160];
  std::snprintf(buf, sizeof buf, ",%u,%u,%.6g,%.6g\n", r.replicas, r.gpus, r.cost_per_hour,
                r.users_per_gpu);
  std::string label = o.candidates[std::size_t(b)].label;
  if (label.find(',') != std::string::npos) label = "\"" + label + "\"";
  return row + label + buf;
}

int run_plan_command(const PlanArgs& a) {
  plan::PlanConfig p = plan::load_plan(a.file);
  if (!a.out.empty()) p.out_dir = a.out;
  if (a.no_early_stop) p.probe.early_stop = false;
  const std::filesystem::path dir = std::filesystem::path(p.out_dir) / p.name;
  return plan_on_ranks(p, a.jobs, [&](plan::ProbeRunner& runner) {
    plan::ProbeCache cache(dir / "cache");
    plan::PlanOptions opts;
    opts.jobs = a.jobs;
    opts.resume = a.resume;
    opts.quiet = a.quiet;
    const auto t0 = std::chrono::steady_clock::now();
    auto wall = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    if (a.users.empty()) {
      const auto outcome = plan::run_plan(p, opts, runner, cache);
      plan::write_plan_files(p, outcome, p.load.users, dir);
      plan::print_plan(p, outcome, p.load.users, wall(), stdout);
      std::printf("results: %s/\n", dir.string().c_str());
      return 0;
    }
    // A capacity curve: the plan once per population, each into users-<n>/, and curve.csv.
    std::string curve = "users,mode,best,replicas,gpus,cost_per_hour,users_per_gpu\n";
    for (const auto u : a.users) {
      opts.users = u;
      const auto outcome = plan::run_plan(p, opts, runner, cache);
      plan::write_plan_files(p, outcome, u, dir / ("users-" + std::to_string(u)));
      plan::print_plan(p, outcome, u, wall(), stdout);
      for (const std::string mode : {"text", "kv_inject", ""})
        curve += curve_row(p, outcome, u, mode);
    }
    plan::write_atomically(dir / "curve.csv", curve);
    std::printf("results: %s/ (curve.csv, users-<n>/)\n", dir.string().c_str());
    return 0;
  });
}

}  // namespace

void add_plan_commands(CLI::App& app, Action& action) {
  auto args = std::make_shared<PlanArgs>();
  auto* cmd = app.add_subcommand(
      "plan", "Capacity planning: the fewest replicas meeting the SLOs for each candidate");
  cmd->add_option("PLAN", args->file, "plan YAML (docs/plan.md)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option(
      "--jobs,-j", args->jobs,
      "probes run side by side (threads; default 0: one per core, or one per rank under mpirun)");
  cmd->add_flag("--resume", args->resume,
                "reuse the probes cached in results/<plan>/cache/ by an earlier run");
  cmd->add_flag("--no-early-stop", args->no_early_stop,
                "run every probe to its end (same outcomes, slower)");
  cmd->add_option("--users", args->users, "a capacity curve: plan for each population")
      ->delimiter(',');
  cmd->add_option("--out", args->out, "results directory (default: output.dir of the plan)");
  cmd->add_flag("--quiet,-q", args->quiet, "no progress on stderr");
  cmd->callback([&action, args] { action = [args] { return run_plan_command(*args); }; });
}

}  // namespace inferscale::cli
