#pragma once
// @brief The `inferscale` CLI: each group of subcommands registers itself from its own file.

#include <CLI/CLI.hpp>
#include <functional>

namespace inferscale::cli {

/// Work a subcommand runs after parsing; returns the exit status.
using Action = std::function<int()>;

/// Each adds its subcommands to `app`; the chosen one stores its work in `action`.
void add_trace_commands(CLI::App& app, Action& action);
void add_policy_commands(CLI::App& app, Action& action);
void add_policy_mrc_commands(CLI::App& app, Action& action);
void add_run_commands(CLI::App& app, Action& action);

}  // namespace inferscale::cli
