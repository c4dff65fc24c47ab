#pragma once
// @brief INFERSCALE_HOST_TRACE=1: lines on stderr with the host's time (us) from a start to each
// named point, for finding where the host spends its time: one `host trace:` line per executor
// step (GpuExecutor::execute), and `host setup:`, `host warm-up:` and `host teardown:` lines for
// what a run's executor does before its first step and after its last.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace inferscale {

class HostTrace {
 public:
  /// `prefix` starts the line ("host trace:").
  explicit HostTrace(const char* prefix = "host trace:")
      : on_(enabled()), prefix_(prefix), t0_(std::chrono::steady_clock::now()) {}
  HostTrace(const HostTrace&) = delete;
  HostTrace& operator=(const HostTrace&) = delete;
  void at(const char* point) {
    if (!on_) return;
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                        std::chrono::steady_clock::now() - t0_)
                        .count();
    line_ += std::string(line_.empty() ? prefix_ : "") + " " + point + "=" + std::to_string(us);
  }
  /// Appends "name=value" pairs after the points (the step's shape and counters).
  void note(const std::string& pairs) {
    if (on_ && !pairs.empty()) line_ += " " + pairs;
  }
  bool on() const { return on_; }
  ~HostTrace() {
    if (on_ && !line_.empty()) std::fprintf(stderr, "%s\n", line_.c_str());
  }

  static bool enabled() {
    static const bool on = [] {
      const char* v = std::getenv("INFERSCALE_HOST_TRACE");
      return v != nullptr && v[0] != '\0' && v[0] != '0';
    }();
    return on;
  }

 private:
  bool on_;
  const char* prefix_;
  std::chrono::steady_clock::time_point t0_;
  std::string line_;
};

}  // namespace inferscale
