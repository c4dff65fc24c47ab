#pragma once
// @brief A fleet partitioned over several processes (MPI ranks): which runs can be, the order
// keys each part writes beside its requests.csv and timeline.json, and the merge of the parts'
// files into the single process's files, byte for byte. No MPI here: mpi/ moves the figures.
//
// Exact when a request's replica depends on its user alone (user_affinity) and the replicas
// share nothing: then each replica sees the same records, at the same times, whichever process
// runs it, and only the order of rows of equal times is left, which the order keys rebuild from
// each replica's chain of steps (sim_events.h) and the trace position of the record that woke
// it.

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "sim/config/experiment.h"
#include "traces/types.h"

namespace inferscale {

/// Why `run` cannot be partitioned over processes, naming what would work; empty: it can.
std::string partition_refusal(const RunConfig& run);

/// @brief Where rows of a part go among the fleet's rows of equal time. For each group of rows
/// (those one step end completed, or one timeline step) a part writes the time (the step's end,
/// or its start for the timeline), the replica, the trace position of the record that woke the
/// replica (`kick`), the row count, and the replica's chain of step starts since it was last
/// idle, as what was added to it since that replica's previous group (or the whole chain when it
/// restarted), so the files grow with the steps, not with the chains' lengths.
class OrderLog {
 public:
  explicit OrderLog(const std::string& path);  // empty: none
  ~OrderLog();
  OrderLog(const OrderLog&) = delete;
  OrderLog& operator=(const OrderLog&) = delete;
  bool on() const { return f_ != nullptr; }
  /// A group of `rows` rows at `time` from `replica`, whose chain (oldest first) is `starts`.
  void add(SimTime time, int replica, const std::vector<SimTime>& starts, std::uint64_t kick,
           std::uint32_t rows);
  void close();

 private:
  struct Logged {
    std::uint64_t kick = ~std::uint64_t{0};
    std::size_t length = 0;
  };
  std::FILE* f_ = nullptr;
  std::string path_;
  std::vector<Logged> logged_;  // by replica: the chain as the file has it
};

/// The order of two groups of rows of different replicas: -1 when the one at (`ta`, chain `a`,
/// `kick_a`) comes first, 1 when the other does, as the event queue orders their step ends
/// (sim_events.h chain_after): time, then the latest starts, a chain at its kick after a step
/// end, then the kicks' trace positions.
int compare_order(SimTime ta, std::span<const SimTime> a, std::uint64_t kick_a, SimTime tb,
                  std::span<const SimTime> b, std::uint64_t kick_b);

/// Merges the parts' requests.csv files (each a header and its rows in its own order) into
/// `out`, in the fleet's order given by each part's order keys.
void merge_requests_csv(const std::vector<std::string>& parts,
                        const std::vector<std::string>& orders, const std::string& out);
/// The same for timeline.json files (one step a line).
void merge_timeline(const std::vector<std::string>& parts, const std::vector<std::string>& orders,
                    const std::string& out);

}  // namespace inferscale
