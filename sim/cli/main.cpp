// inferscale: the single command-line entry point.
#include <cstdio>
#include <exception>

#include "sim/cli/commands.h"
#include "traces/error.h"

int main(int argc, char** argv) {
  CLI::App app{"InferScale: trace-driven simulator and executor for personalized LLM serving"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "inferscale 0.1.0");
  inferscale::cli::Action action;
  inferscale::cli::add_trace_commands(app, action);
  inferscale::cli::add_policy_commands(app, action);
  inferscale::cli::add_policy_mrc_commands(app, action);
  inferscale::cli::add_run_commands(app, action);
  inferscale::cli::add_serve_commands(app, action);
  for (auto group : inferscale::cli::command_groups()) group(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;  // bad command line: status 2, like any bad input
  }
  try {
    return action ? action() : 0;
  } catch (const inferscale::InputError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "internal error: %s\n", e.what());
    return 1;
  }
}
