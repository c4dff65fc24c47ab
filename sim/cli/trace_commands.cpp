// `inferscale trace ...`: import, generate and describe traces.
#include "sim/cli/commands.h"

namespace inferscale::cli {

void add_trace_commands(CLI::App& app, Action& action) {
  auto* trace = app.add_subcommand("trace", "Import, generate and describe traces");
  trace->require_subcommand(1);
  (void)action;
}

}  // namespace inferscale::cli
