#include "sim/trace_ahead.h"

#include <utility>

namespace inferscale {

TraceAhead::TraceAhead(RecordStream& reader, TraceRecord& first, bool have, int replicas,
                       ReachFn reach)
    : reader_(reader),
      reach_(std::move(reach)),
      slots_(64),
      held_(static_cast<std::size_t>(replicas), 0),
      first_(static_cast<std::size_t>(replicas), 0) {
  if (!have) {
    done_ = true;
    return;
  }
  Slot& s = at(tail_);
  std::swap(s.record, first);
  s.own_facts = false;
  hold(s);
}

void TraceAhead::hold(Slot& s) {
  s.replica = reach_ ? reach_(s.record, requests_) : -1;
  s.omitted = reader_.records_omitted();
  if (s.record.kind == RecordKind::kRequest) ++requests_;
  if (s.replica >= 0 && held_[s.replica]++ == 0) first_[s.replica] = tail_;
  ++tail_;
}

bool TraceAhead::read_one() {
  if (done_) return false;
  // The reader keeps the last request's facts until its next record: copied only when a
  // record is read while that one is still held.
  if (!empty() && at(tail_ - 1).record.kind == RecordKind::kRequest && !at(tail_ - 1).own_facts) {
    Slot& last = at(tail_ - 1);
    const auto& facts = reader_.request_fact_indices();
    last.facts.assign(facts.begin(), facts.end());
    last.own_facts = true;
  }
  if (tail_ - head_ == slots_.size()) {  // full: twice the ring, the records at the same indices
    std::vector<Slot> grown(slots_.size() * 2);
    for (std::uint64_t i = head_; i < tail_; ++i) {
      std::swap(grown[i & (grown.size() - 1)], at(i));
    }
    slots_.swap(grown);
  }
  Slot& s = at(tail_);
  if (!reader_.next(s.record)) {
    done_ = true;
    return false;
  }
  s.own_facts = false;
  hold(s);
  return true;
}

bool TraceAhead::pop() {
  const int r = at(head_).replica;
  ++head_;
  if (r >= 0 && --held_[r] > 0) {
    std::uint64_t i = first_[r] + 1;
    while (at(i).replica != r) ++i;
    first_[r] = i;
  }
  if (empty()) head_ = tail_ = 0;  // the next record into the slot just used: its lines are warm
  return !empty() || read_one();
}

SimTime TraceAhead::next_for(int replica) {
  if (empty()) return kNoRecord;
  if (!reach_) return front().time();
  while (held_[replica] == 0) {
    if (tail_ - head_ >= kMaxAhead) return at(tail_ - 1).record.time();  // later ones are later
    if (!read_one()) return kNoRecord;
  }
  return at(first_[replica]).record.time();
}

}  // namespace inferscale
