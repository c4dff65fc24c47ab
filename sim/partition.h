#pragma once
// @brief A fleet partitioned over several processes (MPI ranks): which runs can be, the order
// keys each part writes beside its requests.csv and timeline.json, and the merge of the parts'
// files into the single process's files, byte for byte. No MPI here: mpi/ moves the figures.
//
// Exact when a request's replica depends on its user alone (user_affinity) and the replicas
// share nothing: then each replica sees the same records, at the same times, whichever process
// runs it, and only the order of rows of equal times is left, which OrderKey rebuilds from each
// replica's chain of steps (sim_events.h) and the trace position of the record that woke it.

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "sim/config/experiment.h"
#include "traces/types.h"

namespace inferscale {

/// Why `run` cannot be partitioned over processes, naming what would work; empty: it can.
std::string partition_refusal(const RunConfig& run);

/// Steps of a chain an order key keeps (from the latest back).
inline constexpr std::uint32_t kOrderDepth = 6;

/// @brief Where rows of a part go among the fleet's rows of equal time: a requests.csv group (the
/// rows one step end completed, `rows` of them) or one timeline step. `time` is the step end
/// (requests) or start (timeline); `starts` the replica's chain of step starts, latest first;
/// `kick` the trace position of the record that started the chain.
struct OrderKey {
  SimTime time = 0;
  std::uint64_t kick = 0;
  std::uint32_t depth = 0;  // the chain's full length
  std::uint32_t rows = 0;
  SimTime starts[kOrderDepth] = {};
};

/// -1: `a` comes first, 1: `b` does; the keys' replicas must differ. std::runtime_error when the
/// chains tie deeper than kOrderDepth steps (the order is not known then).
int compare_order(const OrderKey& a, const OrderKey& b);

/// Appends order keys to a file.
class OrderLog {
 public:
  explicit OrderLog(const std::string& path);  // empty: none
  ~OrderLog();
  OrderLog(const OrderLog&) = delete;
  OrderLog& operator=(const OrderLog&) = delete;
  bool on() const { return f_ != nullptr; }
  /// The key of a replica's chain (starts oldest first) at `time`.
  void add(SimTime time, const std::vector<SimTime>& starts, std::uint64_t kick,
           std::uint32_t rows);
  void close();

 private:
  std::FILE* f_ = nullptr;
  std::string path_;
};

/// Merges the parts' requests.csv files (each a header and its rows in its own order) into
/// `out`, in the fleet's order given by each part's order keys.
void merge_requests_csv(const std::vector<std::string>& parts,
                        const std::vector<std::string>& orders, const std::string& out);
/// The same for timeline.json files (one step a line).
void merge_timeline(const std::vector<std::string>& parts, const std::vector<std::string>& orders,
                    const std::string& out);

}  // namespace inferscale
