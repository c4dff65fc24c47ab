#pragma once
// @brief Runs an experiment: every named run in turn, each into results/<experiment>/<run>/
// (requests.csv, summary.json, optional timeline.json), written atomically.

#include <cstdio>
#include <string>
#include <vector>

#include "sim/config/experiment.h"
#include "sim/simulator.h"

namespace inferscale {

/// @brief The simulator's results version: raised by every change that alters what a run outputs
/// for the same configuration (a scheduler, cost model, store or policy fix; not a refactor that
/// keeps the golden figures). summary.json echoes it; the planner's probe cache keys include it,
/// so a rebuilt simulator that simulates differently does not reuse an older one's probes.
inline constexpr int kResultsVersion = 3;

struct RunnerOptions {
  std::vector<std::string> only_runs;  // empty: all
  std::string out_dir;                 // overrides output.dir when set
  bool progress = true;
};

struct RunOutcome {
  RunConfig config;
  RunSummary summary;
  std::string dir;
};

/// Checks everything that can be checked before a run starts (policies, trace options, files).
void validate_experiment(const ExperimentConfig& exp);
std::vector<RunOutcome> run_experiment(const ExperimentConfig& exp, const RunnerOptions& opts);
/// The comparison table printed after a run.
void print_comparison(const std::vector<RunOutcome>& runs, std::FILE* out);
/// summary.json's content.
std::string summary_json(const RunConfig& cfg, const RunSummary& s);

}  // namespace inferscale
