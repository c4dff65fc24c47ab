#pragma once
// @brief The rows of requests.csv that replicas run in turn over a window of the trace completed
// (sim/simulator.cpp run_windows), put back in the order one event queue handles their step
// ends: by time, then the replicas' step chains and the kicks' trace positions (compare_order,
// the order partitioned runs merge by).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "traces/types.h"

namespace inferscale {

class WindowRows {
 public:
  explicit WindowRows(std::size_t replicas) : replica_ref_(replicas, -1) {}

  /// Held rows [begin, end) completed by replica `rep`'s step end at `time`, while its chain of
  /// step starts since it was idle is `starts` (kept by reference until it restarts) and its
  /// kick's order `kick`.
  void add(SimTime time, int rep, std::uint64_t kick, const std::vector<SimTime>& starts,
           std::size_t begin, std::size_t end);
  /// Before replica `rep`'s chain restarts: rows that name it keep its starts (moved out;
  /// `starts` is left empty).
  void keep_chain(int rep, std::vector<SimTime>& starts);
  /// The held rows' byte ranges in the queue's order; the window is forgotten.
  std::vector<std::pair<std::size_t, std::size_t>> take_order();

 private:
  struct Group {
    SimTime time;
    std::uint64_t kick;
    std::uint32_t chain;     // in chains_
    std::size_t length;      // of the chain then
    std::size_t begin, end;  // bytes of the held rows
  };
  std::vector<Group> groups_;
  std::vector<const std::vector<SimTime>*> chains_;
  std::deque<std::vector<SimTime>> kept_;  // chains restarted while rows named them
  std::vector<std::int32_t> replica_ref_;  // by replica: its chain in chains_, -1: none yet
};

}  // namespace inferscale
