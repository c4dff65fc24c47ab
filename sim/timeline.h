#pragma once
// @brief TimelineFile: output.timeline, the replicas' steps as Chrome trace-event JSON (one
// complete event a step, a row a replica, its batch and phase times as arguments), written as
// the steps start.

#include <cstdio>
#include <string>

#include "sim/replica.h"

namespace inferscale {

class TimelineFile {
 public:
  /// Opens `path` for writing (std::runtime_error when it cannot) and writes the header.
  explicit TimelineFile(const std::string& path);
  ~TimelineFile();
  TimelineFile(const TimelineFile&) = delete;
  TimelineFile& operator=(const TimelineFile&) = delete;
  /// Replica `replica`'s step `s`.
  void add(int replica, const StepRecord& s);
  /// Ends the JSON and closes the file (once; the destructor closes an unfinished one).
  void close();

 private:
  std::FILE* file_ = nullptr;
  bool first_ = true;
};

}  // namespace inferscale
