#pragma once
// @brief Metrics: per-request rows (requests.csv, streamed) and the run's summary figures.

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "sim/request.h"

namespace inferscale {

struct Percentiles {
  double p50 = 0, p90 = 0, p99 = 0, mean = 0, max = 0;
};

/// Percentiles of `v` (reordered in place); nearest-rank on the sorted values.
Percentiles percentiles(std::vector<double>& v);

class Metrics {
 public:
  /// `csv_path` empty: no requests.csv.
  explicit Metrics(const std::string& csv_path);
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  void record(const Request& r, std::uint32_t k, double ttft_slo_ms, double tpot_slo_ms);
  void close();

  /// While rows are held, record() writes none out: they wait in memory, from byte 0 of
  /// rows_held() (hold_rows writes out those before), for write_held_rows.
  void hold_rows();
  std::size_t rows_held() const { return csv_ != nullptr ? buf_.size() : 0; }
  /// Writes the held rows out in the order of `ranges` ([begin, end) byte ranges of the held
  /// rows that cover them once each) and holds the next ones.
  void write_held_rows(const std::vector<std::pair<std::size_t, std::size_t>>& ranges);

  std::uint64_t completed() const { return completed_; }
  std::uint64_t output_tokens() const { return output_tokens_; }
  std::uint64_t good() const { return good_; }
  SimTime first_arrival() const { return first_arrival_; }
  SimTime last_finish() const { return last_finish_; }
  std::vector<double>& ttft_ms() { return ttft_ms_; }
  std::vector<double>& tpot_ms() { return tpot_ms_; }
  std::vector<double>& e2e_ms() { return e2e_ms_; }
  std::vector<double>& queue_ms() { return queue_ms_; }
  std::uint64_t gpu_hits() const { return gpu_hits_; }
  std::uint64_t host_hits() const { return host_hits_; }
  std::uint64_t disk_hits() const { return disk_hits_; }
  std::uint64_t remote_hits() const { return remote_hits_; }
  std::uint64_t misses() const { return misses_; }
  std::uint64_t preemptions() const { return preemptions_; }
  std::uint64_t prefill_tokens() const { return prefill_tokens_; }

 private:
  /// Writes buf_ out; an InputError naming the file when the system refuses (a full disk).
  void flush_csv();
  std::FILE* csv_ = nullptr;
  std::string csv_path_;
  std::string buf_;
  bool hold_ = false;
  std::string reordered_;  // write_held_rows' buffer
  std::uint64_t completed_ = 0, output_tokens_ = 0, good_ = 0;
  std::uint64_t gpu_hits_ = 0, host_hits_ = 0, disk_hits_ = 0, remote_hits_ = 0, misses_ = 0,
                preemptions_ = 0, prefill_tokens_ = 0;
  SimTime first_arrival_ = -1, last_finish_ = 0;
  std::vector<double> ttft_ms_, tpot_ms_, e2e_ms_, queue_ms_;
};

}  // namespace inferscale
