#include "traces/partial_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstring>

namespace inferscale {

namespace {

// Fixed storage that the signal handler reads without locks or allocation: a slot is free (0),
// being written (1) or holds a path (2).
constexpr int kSlots = 64;
constexpr std::size_t kPathBytes = 4096;
char g_paths[kSlots][kPathBytes];
std::atomic<int> g_state[kSlots];
std::atomic<bool> g_installed{false};

void say(const char* s) {
  const ssize_t ignored = ::write(STDERR_FILENO, s, std::strlen(s));
  (void)ignored;
}

/// Removes a file, or a folder and the files in it (one level: the folders registered are
/// flat), with system calls only: this runs inside a signal handler.
void remove_path(const char* path) {
  if (::unlink(path) == 0) return;
  const int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  alignas(8) char buf[4096];
  for (;;) {
    const long n = ::syscall(SYS_getdents64, fd, buf, sizeof(buf));
    if (n <= 0) break;
    for (long at = 0; at < n;) {
      const auto* d = reinterpret_cast<const struct dirent64*>(buf + at);
      at += d->d_reclen;
      if (std::strcmp(d->d_name, ".") == 0 || std::strcmp(d->d_name, "..") == 0) continue;
      if (::unlinkat(fd, d->d_name, 0) != 0) ::unlinkat(fd, d->d_name, AT_REMOVEDIR);
    }
  }
  ::close(fd);
  ::rmdir(path);
}

void on_signal(int sig) {
  bool any = false;
  for (int i = 0; i < kSlots; ++i) {
    if (g_state[i].load(std::memory_order_acquire) != 2) continue;
    if (!any) say("\ninterrupted: removing partial results:");
    any = true;
    say(" ");
    say(g_paths[i]);
    remove_path(g_paths[i]);
  }
  if (any) say("\n");
  std::signal(sig, SIG_DFL);
  std::raise(sig);  // ends the process as the signal would have (status 128 + sig in a shell)
}

void install() {
  bool expected = false;
  if (!g_installed.compare_exchange_strong(expected, true)) return;
  for (const int sig : {SIGINT, SIGTERM}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0) continue;
    // A program that handles the signal itself (the executor server) keeps its handler; one
    // that ignores it (nohup) keeps ignoring it.
    if ((old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL) continue;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT);
    sigaddset(&sa.sa_mask, SIGTERM);
    ::sigaction(sig, &sa, nullptr);
  }
}

}  // namespace

int partial_files_add(const std::string& path) {
  if (path.empty() || path.size() >= kPathBytes) return -1;
  install();
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (!g_state[i].compare_exchange_strong(expected, 1)) continue;
    std::memcpy(g_paths[i], path.c_str(), path.size() + 1);
    g_state[i].store(2, std::memory_order_release);
    return i;
  }
  return -1;
}

void partial_files_release(int handle) {
  if (handle < 0 || handle >= kSlots) return;
  g_state[handle].store(0, std::memory_order_release);
}

std::string partial_file_name(const std::string& path) {
  static std::atomic<std::uint64_t> next{0};
  return path + "." + std::to_string(::getpid()) + "." +
         std::to_string(next.fetch_add(1, std::memory_order_relaxed)) + ".tmp";
}

}  // namespace inferscale
