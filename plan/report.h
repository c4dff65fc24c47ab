#pragma once
// @brief What a plan writes: probes.csv, plan.csv, frontier.csv (and curve.csv for several
// populations), each to a temporary name then renamed, and the table printed on stdout.

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "plan/planner.h"

namespace inferscale::plan {

/// probes.csv, plan.csv and frontier.csv in `dir` (created if needed).
void write_plan_files(const PlanConfig& plan, const PlanOutcome& outcome, std::uint64_t users,
                      const std::filesystem::path& dir);

/// The candidates of the Pareto frontier of cost per hour vs TTFT p99 at the answer, cheapest
/// first.
std::vector<std::size_t> frontier(const PlanOutcome& outcome);

/// The best candidate by the plan's objective (ties: the lower index), or -1.
long best_candidate(const PlanConfig& plan, const PlanOutcome& outcome, const std::string& mode);

/// The store's share of the population's fact KV at the answer (GPU tier, all replicas).
double store_share(const PlanOutcome& outcome, std::size_t candidate);

/// The table on stdout: the best per serving mode and overall, and the search's figures.
void print_plan(const PlanConfig& plan, const PlanOutcome& outcome, std::uint64_t users,
                double wall_s, std::FILE* out);

/// Writes `body` to `path` through a temporary file and a rename.
void write_atomically(const std::filesystem::path& path, const std::string& body);

}  // namespace inferscale::plan
