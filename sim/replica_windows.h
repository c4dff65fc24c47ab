#pragma once
// @brief Replicas run in turn over windows of the trace (sim/simulator_loops.cpp run_windows): the
// records each replica waits to run (WindowQueue), and the rows of requests.csv they complete,
// put back in the order one event queue handles their step ends (WindowRows): by time, then the
// replicas' step chains and the kicks' trace positions (compare_order, the order partitioned
// runs merge by).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "traces/trace.h"
#include "traces/types.h"

namespace inferscale {

/// @brief One replica's requests and memory writes of the window, read ahead in trace order.
class WindowQueue {
 public:
  static constexpr FactId kNoWrite = ~FactId{0};
  struct Held {
    SimTime time;
    std::uint64_t record_index;  // the record's trace position
    std::int64_t position;       // a request's count among the trace's requests
    RequestId id;
    UserId user;
    std::uint32_t query_tokens, output_tokens;
    std::uint32_t facts_begin, facts_end;  // in facts()
    FactId write;                          // kNoWrite: a request
  };
  void hold_request(const RequestRecord& r, std::uint64_t record_index, std::int64_t position,
                    const std::vector<std::uint32_t>& facts) {
    const auto begin = static_cast<std::uint32_t>(facts_.size());
    facts_.insert(facts_.end(), facts.begin(), facts.end());
    items_.push_back(Held{r.time, record_index, position, r.id, r.user, r.query_tokens,
                          r.output_tokens, begin, static_cast<std::uint32_t>(facts_.size()),
                          kNoWrite});
  }
  void hold_write(const FactRecord& f, std::uint64_t record_index, FactId id) {
    const auto at = static_cast<std::uint32_t>(facts_.size());
    items_.push_back(Held{f.time, record_index, 0, 0, f.user, 0, 0, at, at, id});
  }
  bool empty() const { return head_ == items_.size(); }
  const Held& front() const { return items_[head_]; }
  void pop() { ++head_; }
  const std::uint32_t* facts(const Held& h) const { return facts_.data() + h.facts_begin; }
  /// Forgets the window's records (their memory is kept for the next).
  void clear() {
    items_.clear();
    facts_.clear();
    head_ = 0;
  }

 private:
  std::vector<Held> items_;
  std::vector<std::uint32_t> facts_;
  std::size_t head_ = 0;
};

/// @brief The rows of requests.csv that a window's replicas completed, in one queue's order.
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
