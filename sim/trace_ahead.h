#pragma once
// @brief TraceAhead: an open-loop trace's records read ahead of the simulated clock, each with
// the replica it will reach, so that a replica's fused steps may run up to the next record that
// reaches it instead of the next record of any replica.

#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "traces/record_stream.h"

namespace inferscale {

class TraceAhead {
 public:
  /// The replica a record reaches (-1: none); `request` counts the trace's requests before it.
  using ReachFn = std::function<int(const TraceRecord&, std::uint64_t request)>;
  static constexpr SimTime kNoRecord = std::numeric_limits<SimTime>::max();

  /// `first`: the record already read (if `have`). Without `reach` (a router that routes by the
  /// replicas' state), nothing is read ahead and next_for is the front record's time.
  TraceAhead(RecordStream& reader, TraceRecord& first, bool have, int replicas, ReachFn reach);

  bool empty() const { return head_ == tail_; }
  /// The next record in trace order (not empty()).
  const TraceRecord& front() const { return at(head_).record; }
  /// Records of the whole trace the reader left out before front() (RecordStream::records_omitted).
  std::uint64_t front_omitted() const { return at(head_).omitted; }
  /// Dense fact ids of front() when it is a request (RecordStream::request_fact_indices).
  const std::vector<std::uint32_t>& front_facts() const {
    const Slot& f = at(head_);
    return f.own_facts ? f.facts : reader_.request_fact_indices();
  }
  /// Drops front() and makes the following record the front; false at the end of the trace.
  bool pop();
  /// The time of the first record from the front on that reaches `replica` (a time at or
  /// before it when it is more than kMaxAhead records ahead); kNoRecord when none.
  SimTime next_for(int replica);

 private:
  struct Slot {
    TraceRecord record;
    std::vector<std::uint32_t> facts;
    bool own_facts = false;  // facts holds them; else the reader does (the last record read)
    int replica = -1;
    std::uint64_t omitted = 0;  // RecordStream::records_omitted() when it was read
  };
  static constexpr std::size_t kMaxAhead = 4096;  // records; a few MiB at most

  Slot& at(std::uint64_t i) { return slots_[i & (slots_.size() - 1)]; }
  const Slot& at(std::uint64_t i) const { return slots_[i & (slots_.size() - 1)]; }
  bool read_one();     // appends the next record; false at the end of the trace
  void hold(Slot& s);  // counts the record just placed at tail_

  RecordStream& reader_;
  ReachFn reach_;
  bool done_ = false;                  // the reader is at the end of the trace
  std::vector<Slot> slots_;            // a ring, its size a power of two
  std::uint64_t head_ = 0, tail_ = 0;  // records [head_, tail_) are held
  std::uint64_t requests_ = 0;         // requests read
  std::vector<std::uint32_t> held_;    // by replica: records held that reach it
  std::vector<std::uint64_t> first_;   // by replica: the first of them (when held_ > 0)
};

}  // namespace inferscale
