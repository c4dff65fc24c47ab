#pragma once
// @brief A full disk for a test: a limit on the size of the files this process writes.

#include <signal.h>
#include <sys/resource.h>

#include "tests/catch.h"

namespace inferscale::test {

/// While it lives, a write that would take a file of this process past `bytes` fails with EFBIG
/// ("File too large") instead of ending the process (SIGXFSZ ignored); the limit and the
/// signal's action are restored after.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGXFSZ, &ignore, &old_action_);
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved_) == 0);
    rlimit small = saved_;
    small.rlim_cur = bytes;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    ::sigaction(SIGXFSZ, &old_action_, nullptr);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit saved_{};
  struct sigaction old_action_ {};
};

}  // namespace inferscale::test
