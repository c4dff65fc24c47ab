#pragma once
// @brief TraceWriter: writes a JSONL trace atomically (a temporary file of this writer,
// `<path>.<pid>.<n>.tmp`, renamed on close(); removed if the writer is dropped, or on
// SIGINT/SIGTERM).

#include <cstdio>
#include <string>

#include "traces/trace.h"

namespace inferscale {

class TraceWriter {
 public:
  /// "-" writes to stdout (not atomic).
  explicit TraceWriter(const std::string& path);
  ~TraceWriter();  // without close(): the temporary file is removed, nothing is left behind
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  void write(const TraceHeader& h);
  void write_fact(const FactRecord& f, bool memory_write);
  void write(const RequestRecord& r);
  /// Flushes and renames into place.
  void close();
  std::uint64_t records() const { return records_; }

 private:
  void flush_if_full();
  std::string path_, tmp_path_;
  int partial_ = -1;  // partial_files handle of tmp_path_
  std::FILE* file_ = nullptr;
  std::string buf_;
  std::uint64_t records_ = 0;
  bool closed_ = false;
};

}  // namespace inferscale
