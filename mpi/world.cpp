#include "mpi/world.h"

#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "traces/partial_files.h"

namespace inferscale::mpi {

namespace {

World g_world;
bool g_initialized = false;
char g_doing[512] = "starting";
char g_others[2048] = "";
struct sigaction g_before[2];  // SIGABRT's and SIGTERM's actions before ours

void say(const char* text) {
  [[maybe_unused]] auto w = write(STDERR_FILENO, text, std::strlen(text));
}

extern "C" void on_rank_signal(int sig) {
  char line[2800];
  std::snprintf(line, sizeof line, "inferscale rank %d: stopped by signal %d (%s) while %s%s%s\n",
                g_world.rank, sig, sig == SIGTERM ? "the job is ending" : strsignal(sig), g_doing,
                g_others[0] != '\0' ? "; " : "", g_others);
  say(line);
  // Then what was there: the removal of partial results (traces/partial_files.h), or the default.
  const struct sigaction& before = g_before[sig == SIGTERM ? 1 : 0];
  if ((before.sa_flags & SA_SIGINFO) == 0 && before.sa_handler != SIG_DFL &&
      before.sa_handler != SIG_IGN) {
    before.sa_handler(sig);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"}) {
    if (std::getenv(v) != nullptr) return true;
  }
  return false;
}

World init_world() {
  if (g_initialized || !launched_by_mpi()) return g_world;
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  g_initialized = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_world.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_world.size);
  if (g_world.size > 1) install_rank_signal_notes();
  return g_world;
}

World world() {
  return g_world;
}

void finish_world() {
  if (!g_initialized) return;
  g_initialized = false;
  MPI_Finalize();
}

void abort_world(int status) {
  std::fflush(stdout);
  std::fflush(stderr);
  if (g_initialized && g_world.size > 1) {
    signal(SIGTERM, SIG_DFL);  // the launcher's SIGTERM to this rank needs no note
    MPI_Abort(MPI_COMM_WORLD, status);
  }
  std::exit(status);
}

void refuse_world(const std::string& why) {
  if (g_world.rank == 0) std::fprintf(stderr, "error: %s\n", why.c_str());
  std::fflush(stdout);
  std::fflush(stderr);
  if (g_initialized) {
    MPI_Barrier(MPI_COMM_WORLD);
    finish_world();
  }
  std::exit(2);
}

void set_doing(const std::string& what) {
  const std::size_t n = std::min(what.size(), sizeof g_doing - 1);
  std::memcpy(g_doing, what.data(), n);
  g_doing[n] = '\0';
}

void set_others_doing(const std::string& what) {
  const std::size_t n = std::min(what.size(), sizeof g_others - 1);
  std::memcpy(g_others, what.data(), n);
  g_others[n] = '\0';
}

RankFault test_rank_fault() {
  RankFault f;
  const char* v = std::getenv("INFERSCALE_TEST_RANK_FAULT");
  if (v == nullptr) return f;
  char how[16] = "";
  if (std::sscanf(v, "%d:%ld:%15s", &f.rank, &f.after, how) != 3) return RankFault{};
  f.abort = std::string(how) == "abort";
  return f;
}

void RankFault::fail_if_due(int at_rank, long done, const char* what) const {
  if (at_rank != rank || done != after) return;
  if (abort) std::abort();
  throw std::runtime_error("test fault after " + std::to_string(after) + " " + what);
}

void install_rank_signal_notes() {
  // The partial results' handlers first (they install only over the default action), so that
  // ours can end by calling them.
  partial_files_release(partial_files_add("/nonexistent/inferscale-install-handlers"));
  const int signals[2] = {SIGABRT, SIGTERM};
  for (int i = 0; i < 2; ++i) {
    sigaction(signals[i], nullptr, &g_before[i]);
    struct sigaction sa {};
    sa.sa_handler = on_rank_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(signals[i], &sa, nullptr);
  }
}

}  // namespace inferscale::mpi
