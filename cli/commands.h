#pragma once
// @brief The `inferscale` CLI: each group of subcommands registers itself from its own file.

#include <CLI/CLI.hpp>
#include <functional>
#include <vector>

namespace inferscale::cli {

/// Work a subcommand runs after parsing; returns the exit status.
using Action = std::function<int()>;

/// Each adds its subcommands to `app`; the chosen one stores its work in `action`.
void add_trace_commands(CLI::App& app, Action& action);
void add_policy_commands(CLI::App& app, Action& action);
void add_policy_mrc_commands(CLI::App& app, Action& action);
void add_run_commands(CLI::App& app, Action& action);
void add_serve_commands(CLI::App& app, Action& action);
void add_plan_commands(CLI::App& app, Action& action);

/// The `policy` subcommand group (created on first use), which several files extend.
CLI::App* policy_group(CLI::App& app);

/// A group of subcommands built only with an optional dependency (e.g. `bench`, with the
/// libtorch executor) registers itself from its own file at start-up; main adds them all.
using CommandGroup = void (*)(CLI::App& app, Action& action);
bool register_command_group(CommandGroup group);
std::vector<CommandGroup>& command_groups();

}  // namespace inferscale::cli
