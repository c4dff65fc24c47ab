#include "sim/run_folder.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "traces/error.h"
#include "traces/partial_files.h"

namespace inferscale {

namespace fs = std::filesystem;

bool remove_tree(const fs::path& p) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return errno == ENOENT;
  const int rc = ::nftw(
      p.c_str(),
      [](const char* path, const struct stat*, int type, struct FTW*) {
        return type == FTW_DP ? ::rmdir(path) : ::unlink(path);
      },
      16, FTW_DEPTH | FTW_PHYS);
  return rc == 0;
}

namespace {

std::string errno_text(int e) {
  return std::strerror(e);
}

/// The process id written in a lock file ("" if none can be read).
std::string lock_owner(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  if (n <= 0) return "";
  std::string s(buf, static_cast<std::size_t>(n));
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

void replace_path(const fs::path& from, const fs::path& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return;
  const int first = errno;
  if (first == EEXIST) {
    // Swap the new one in; the old one is then at `from` and goes.
    if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_EXCHANGE) == 0) {
      if (!remove_tree(from)) {
        throw std::runtime_error("cannot remove the replaced " + from.string() + ": " +
                                 errno_text(errno));
      }
      return;
    }
  }
  if (first != EEXIST && first != EINVAL && first != ENOSYS) {
    throw std::runtime_error("cannot move " + from.string() + " to " + to.string() + ": " +
                             errno_text(first));
  }
  // No exchange here: the old one aside, the new one in, the old one back if that failed.
  const fs::path aside = to.string() + ".old." + std::to_string(::getpid());
  remove_tree(aside);
  const bool had_old = ::rename(to.c_str(), aside.c_str()) == 0;
  if (::rename(from.c_str(), to.c_str()) != 0) {
    const int e = errno;
    if (had_old) ::rename(aside.c_str(), to.c_str());
    throw std::runtime_error("cannot move " + from.string() + " to " + to.string() + ": " +
                             errno_text(e));
  }
  if (had_old) remove_tree(aside);
}

RunFolder::RunFolder(const fs::path& base, const std::string& run, const std::string& where)
    : dir_(base / run),
      tmp_(base / (run + ".tmp." + std::to_string(::getpid()))),
      lock_(base / (run + ".lock")) {
  std::error_code ec;
  for (fs::path p = base; !p.empty() && !fs::exists(p, ec) && !ec; p = p.parent_path()) {
    created_ = p;
    if (p == p.parent_path()) break;
  }
  fs::create_directories(base, ec);
  if (ec) {
    throw InputError(where,
                     "cannot create the results folder '" + base.string() + "': " + ec.message());
  }
  // The lock: flock on `<run>.lock`, which holds the owner's process id. A lock file removed
  // and made anew by its owner between our open and our flock is not the lock: check that the
  // file we hold is the one at the path, else take it again.
  for (int attempt = 0;; ++attempt) {
    lock_fd_ = ::open(lock_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_fd_ < 0) {
      throw InputError(where, "cannot write in the results folder '" + base.string() +
                                  "': " + errno_text(errno));
    }
    if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
      const std::string owner = lock_owner(lock_fd_);
      ::close(lock_fd_);
      lock_fd_ = -1;
      throw InputError(where, "the results folder '" + dir_.string() + "' is being written by " +
                                  (owner.empty() ? "another process" : "process " + owner) +
                                  " (another run of the same experiment and run); wait for it "
                                  "or give another output.dir or --out");
    }
    struct stat held, at_path;
    if (::fstat(lock_fd_, &held) == 0 && ::stat(lock_.c_str(), &at_path) == 0 &&
        held.st_ino == at_path.st_ino && held.st_dev == at_path.st_dev) {
      break;
    }
    ::close(lock_fd_);
    lock_fd_ = -1;
    if (attempt == 100) throw std::runtime_error("cannot take the lock " + lock_.string());
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(lock_fd_, 0) != 0 || ::pwrite(lock_fd_, pid.data(), pid.size(), 0) < 0) {
    // The lock holds without the id; only the message of a second run would lack it.
  }
  // What interrupted runs of this name left (their lock is gone with them).
  for (const auto& e : fs::directory_iterator(base, ec)) {
    const std::string name = e.path().filename().string();
    if (name == run + ".tmp" || name.rfind(run + ".tmp.", 0) == 0 ||
        name.rfind(run + ".old.", 0) == 0) {
      remove_tree(e.path());
    }
  }
  if (!fs::create_directory(tmp_, ec) || ec) {
    const std::string why = ec ? ec.message() : "it exists";
    ::unlink(lock_.c_str());
    ::close(lock_fd_);
    throw InputError(where, "cannot create '" + tmp_.string() + "': " + why);
  }
  partial_ = partial_files_add(tmp_.string());
  partial_lock_ = partial_files_add(lock_.string());
}

RunFolder::~RunFolder() {
  if (!committed_) remove_tree(tmp_);
  partial_files_release(partial_);
  partial_files_release(partial_lock_);
  if (lock_fd_ >= 0) {
    ::unlink(lock_.c_str());  // while held: a waiting opener sees another file and retries
    ::close(lock_fd_);
  }
  // Folders made for a run that left nothing (a trace that did not fit, say): removed while
  // empty, innermost first.
  if (!created_.empty()) {
    for (fs::path p = dir_.parent_path(); ::rmdir(p.c_str()) == 0 && p != created_;
         p = p.parent_path()) {
    }
  }
}

void RunFolder::commit(const fs::path& dest) {
  replace_path(tmp_, dest);
  committed_ = true;
  partial_files_release(partial_);
  partial_ = -1;
}

}  // namespace inferscale
