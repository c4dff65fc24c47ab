// inferscale-bench: the `bench` command group alone, for a GPU machine where only the executor
// is built (it links neither the simulator nor the trace tools). Same options and output as
// `inferscale bench executor`.
#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "traces/error.h"

int main(int argc, char** argv) {
  CLI::App app{"InferScale executor benchmarks"};
  app.require_subcommand(1);
  inferscale::cli::Action action;
  for (auto group : inferscale::cli::command_groups()) group(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
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
