#pragma once
// @brief This process's place among the ranks of an MPI job, and the job's end: initialized
// only when an MPI launcher (mpirun, srun) started the process, so that a plain `inferscale`
// never touches MPI.

#include <string>

namespace inferscale::mpi {

struct World {
  int rank = 0;
  int size = 1;
};

/// Whether an MPI launcher started this process (its environment says so).
bool launched_by_mpi();

/// Initializes MPI once (only the main thread calls MPI) where launched by MPI; {0, 1} otherwise.
World init_world();

/// The world init_world() returned ({0, 1} before it).
World world();

/// Ends this rank's part of the job normally (MPI_Finalize, where initialized).
void finish_world();

/// Ends every rank of the job with exit status `status`, after this rank printed why.
[[noreturn]] void abort_world(int status);

/// Ends every rank with status 2 (bad input) where all of them found the same mistake: rank 0
/// prints "error: `why`", and the others wait until it has, since the launcher stops the job
/// at the first rank that exits with an error (a quiet rank ending first had the message cut).
[[noreturn]] void refuse_world(const std::string& why);

/// What this rank is doing, for the message printed if it is stopped by a signal (SIGABRT,
/// SIGTERM, SIGSEGV...): "running probe ...". Kept in a fixed buffer (signal-safe to read).
void set_doing(const std::string& what);

/// What the other ranks are doing as this one knows it (rank 0: the probe each worker runs),
/// printed with set_doing's text.
void set_others_doing(const std::string& what);

/// A failure on purpose, for the tests of a failed rank: INFERSCALE_TEST_RANK_FAULT=RANK:N:how
/// (how: abort or throw) names the rank that fails when handed its task N + 1 (a plan's probe, a
/// fleet's run) after N done. Unset or malformed: rank -1, nobody fails.
struct RankFault {
  int rank = -1;
  long after = 0;
  bool abort = false;

  /// Fails as the variable says if it names `rank` and `done` tasks (`what`: "probes", "runs")
  /// are done: std::abort(), or a std::runtime_error "test fault after N what".
  void fail_if_due(int rank, long done, const char* what) const;
};
RankFault test_rank_fault();

/// Installs the handlers that print "inferscale rank R: signal S while DOING" before the
/// default action (done by init_world for jobs of several ranks).
void install_rank_signal_notes();

}  // namespace inferscale::mpi
