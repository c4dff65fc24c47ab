// inferscale: the single command-line entry point.
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "cli/commands.h"
#include "traces/error.h"

namespace {

void say(const char* text, std::size_t n) {
  [[maybe_unused]] auto w = write(STDERR_FILENO, text, n);
}

// The module and offset of an address: "inferscale+0x1234" (`addr2line -Cfpe inferscale 0x1234`
// names it), or "libfoo.so+0x..".
int describe(char* out, std::size_t n, const void* address) {
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) {
    return std::snprintf(out, n, "%p (no module)", address);
  }
  const char* base = std::strrchr(info.dli_fname, '/');
  return std::snprintf(out, n, "%s+0x%lx%s%s", base ? base + 1 : info.dli_fname,
                       static_cast<unsigned long>(reinterpret_cast<std::uintptr_t>(address) -
                                                  reinterpret_cast<std::uintptr_t>(info.dli_fbase)),
                       info.dli_sname ? " " : "", info.dli_sname ? info.dli_sname : "");
}

// A crash prints the signal, the faulting instruction and address, the unwound stack, and the
// return addresses into this program found on the stack (they survive where unwinding stops,
// as in code without unwind tables), so a report from a machine without a debugger still says
// where. For diagnosis only: it then re-raises for the default action.
extern "C" void on_fatal_signal(int sig, siginfo_t* info, void* context) {
  char line[512];
  const auto* uc = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
  const auto pc = reinterpret_cast<const void*>(uc->uc_mcontext.gregs[REG_RIP]);
  const auto* sp = reinterpret_cast<const std::uintptr_t*>(uc->uc_mcontext.gregs[REG_RSP]);
#else
  const void* pc = nullptr;
  const std::uintptr_t* sp = nullptr;
  (void)uc;
#endif
  int n = std::snprintf(line, sizeof line, "inferscale: fatal signal %d at address %p; pc ", sig,
                        info ? info->si_addr : nullptr);
  n += describe(line + n, sizeof line - std::size_t(n), pc);
  say(line, std::size_t(n));
  say("\nunwound stack:\n", 16);
  void* frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), STDERR_FILENO);
  if (sp != nullptr) {
    // The caller of a call through a null pointer is the word at the stack pointer.
    say("top of the stack, words that point into a module:\n", 51);
    for (int i = 0; i < 16; ++i) {
      const auto* v = reinterpret_cast<const void*>(sp[i]);
      Dl_info d{};
      if (dladdr(v, &d) == 0) continue;
      n = std::snprintf(line, 32, "  [sp+%d] ", 8 * i);
      n += describe(line + n, sizeof line - std::size_t(n) - 1, v);
      line[n++] = '\n';
      say(line, std::size_t(n));
    }
    say("return addresses into inferscale on the stack:\n", 47);
    Dl_info self{};
    dladdr(reinterpret_cast<const void*>(&on_fatal_signal), &self);
    int found = 0;
    for (int i = 0; i < 8192 && found < 48; ++i) {
      const auto* v = reinterpret_cast<const void*>(sp[i]);
      Dl_info d{};
      if (dladdr(v, &d) == 0 || d.dli_fbase != self.dli_fbase) continue;
      n = describe(line, sizeof line - 1, v);
      line[n++] = '\n';
      say(line, std::size_t(n));
      ++found;
    }
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void install_crash_handler() {
  void* warm[1];
  backtrace(warm, 1);  // loads libgcc now, not inside the handler
  static char alt_stack[1 << 16];
  stack_t ss{};
  ss.ss_sp = alt_stack;
  ss.ss_size = sizeof alt_stack;
  sigaltstack(&ss, nullptr);  // a stack overflow is reported too
  struct sigaction sa {};
  sa.sa_sigaction = on_fatal_signal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) sigaction(sig, &sa, nullptr);
}

// Simulations of big populations read their records at random over gigabytes: with 2 MiB pages
// a lookup's address translation stays in the TLB (9 % less time at a million users). Linux
// gives transparent huge pages to memory marked for them (its usual "madvise" mode), which
// glibc's malloc does when GLIBC_TUNABLES says so at start: `run` and `plan` execute themselves
// again, once, with glibc.malloc.hugetlb=1 added. INFERSCALE_HUGE_PAGES=0, or a GLIBC_TUNABLES
// that names that tunable already, leaves the process as it is.
void ask_for_huge_pages(int argc, char** argv) {
  if (argc < 2 || (std::strcmp(argv[1], "run") != 0 && std::strcmp(argv[1], "plan") != 0)) return;
  const char* setting = std::getenv("INFERSCALE_HUGE_PAGES");
  if (setting != nullptr && std::strcmp(setting, "0") == 0) return;
  const char* given = std::getenv("GLIBC_TUNABLES");
  const std::string before = given != nullptr ? given : "";
  if (before.find("glibc.malloc.hugetlb") != std::string::npos) return;
  if (access("/sys/kernel/mm/transparent_hugepage/enabled", R_OK) != 0) return;  // none here
  const std::string tunables = before + (before.empty() ? "" : ":") + "glibc.malloc.hugetlb=1";
  setenv("GLIBC_TUNABLES", tunables.c_str(), 1);
  execv("/proc/self/exe", argv);  // returns only on failure: then it runs as it is
  if (given != nullptr) {
    setenv("GLIBC_TUNABLES", before.c_str(), 1);
  } else {
    unsetenv("GLIBC_TUNABLES");
  }
}

}  // namespace

int main(int argc, char** argv) {
  ask_for_huge_pages(argc, argv);
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
  inferscale::cli::add_plan_commands(app, action);
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
