// inferscale: the single command-line entry point.
#include <execinfo.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <exception>

#include "sim/cli/commands.h"
#include "traces/error.h"

namespace {

// A crash prints its signal and the raw stack (module(+offset) per frame: `addr2line -Cfpe
// inferscale OFFSET` names them) before the default action, so a report from a machine without
// a debugger still says where. Only async-signal-safe calls.
extern "C" void on_fatal_signal(int sig) {
  static const char kHead[] = "inferscale: fatal signal; stack:\n";
  [[maybe_unused]] auto n = write(STDERR_FILENO, kHead, sizeof(kHead) - 1);
  void* frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), STDERR_FILENO);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void install_crash_handler() {
  void* warm[1];
  backtrace(warm, 1);  // loads libgcc now, not inside the handler
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, on_fatal_signal);
}

}  // namespace

int main(int argc, char** argv) {
  install_crash_handler();
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
