#pragma once
// @brief Progress: the progress line of long work on stderr, in phases (reading facts or the
// warm start, simulation, writing; a trace's generation or conversion), each with its own
// count, rate and the process's resident memory.

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

#include "traces/types.h"

namespace inferscale {

/// @brief A progress line, redrawn in place at most four times a second once the work has
/// taken more than `after` of wall time (shorter work prints nothing):
///
///     [=========                     ]  31.2%  simulation  3120000 requests  sim 1523.44 s
///     35210 requests/s  RSS 1412 MiB
///
/// (one line). The bar is the share of the whole work done; the count and its rate are the
/// current phase's, the rate over the phase's own wall time. A new phase ends the last one's
/// line with its final figures.
class Progress {
 public:
  /// `partial_dir`: where the work writes until it ends, said once when the line first shows.
  explicit Progress(bool enabled, std::string partial_dir = {}, std::FILE* out = stderr,
                    std::chrono::milliseconds after = std::chrono::seconds(1))
      : enabled_(enabled),
        partial_dir_(std::move(partial_dir)),
        out_(out),
        after_(after),
        start_(Clock::now()),
        phase_start_(start_),
        last_(start_) {}

  /// Starts phase `name`, which counts `unit` (nullptr: counts nothing). A line already shown
  /// is ended with the last phase's final figures, and the new phase is shown at once.
  void phase(const char* name, const char* unit) {
    if (!enabled_) return;
    if (shown_) {
      draw(Clock::now());
      std::fputc('\n', out_);
    }
    name_ = name;
    unit_ = unit;
    done_ = 0;
    sim_now_ = -1;
    phase_start_ = Clock::now();
    if (shown_) draw(phase_start_);
  }
  /// `fraction` of the whole work done, `done` units of this phase; `sim_now` >= 0: the
  /// simulated time reached (the line shows the latest of the phase: a fact declared when its
  /// user first asks is a record at t = 0).
  void update(double fraction, std::uint64_t done, SimTime sim_now = -1) {
    if (!enabled_) return;
    fraction_ = fraction;
    done_ = done;
    sim_now_ = std::max(sim_now_, sim_now);
    const auto t = Clock::now();
    if (t - start_ < after_ || (shown_ && t - last_ < std::chrono::milliseconds(250))) return;
    if (!shown_ && !partial_dir_.empty()) {
      std::fprintf(out_, "writing %s/ (removed if the run is interrupted)\n", partial_dir_.c_str());
    }
    shown_ = true;
    draw(t);
  }
  /// Ends the line (when shown) with the last figures.
  void finish() {
    if (!shown_) return;
    draw(Clock::now());
    std::fputc('\n', out_);
    std::fflush(out_);
    shown_ = false;
  }
  double wall_s() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  /// This process's resident memory (Linux /proc/self/statm; 0 elsewhere).
  static double resident_mib() {
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (f == nullptr) return 0;
    unsigned long long size = 0, resident = 0;
    const int n = std::fscanf(f, "%llu %llu", &size, &resident);
    std::fclose(f);
    return n == 2 ? double(resident) * double(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0) : 0;
  }

 private:
  using Clock = std::chrono::steady_clock;
  void draw(Clock::time_point t) {
    last_ = t;
    const int width = 30;
    const int filled = static_cast<int>(std::clamp(fraction_, 0.0, 1.0) * width);
    std::fprintf(out_, "\r[%.*s%*s] %5.1f%%  %s", filled,
                 "==============================", width - filled, "",
                 100.0 * std::clamp(fraction_, 0.0, 1.0), name_.c_str());
    if (unit_ != nullptr) {
      const double wall = std::chrono::duration<double>(t - phase_start_).count();
      std::fprintf(out_, "  %llu %s", static_cast<unsigned long long>(done_), unit_);
      if (sim_now_ >= 0) std::fprintf(out_, "  sim %.2f s", double(sim_now_) / 1e9);
      std::fprintf(out_, "  %.0f %s/s", wall > 0 ? double(done_) / wall : 0.0, unit_);
    }
    std::fprintf(out_, "  RSS %.0f MiB ", resident_mib());
    std::fflush(out_);
  }

  bool enabled_;
  std::string partial_dir_;
  std::FILE* out_;
  std::chrono::milliseconds after_;
  Clock::time_point start_, phase_start_, last_;
  bool shown_ = false;
  std::string name_ = "working";
  const char* unit_ = nullptr;
  double fraction_ = 0;
  std::uint64_t done_ = 0;
  SimTime sim_now_ = -1;
};

}  // namespace inferscale
