#pragma once
// @brief RecordStream: what the simulator and the trace tools read a trace through, whether it
// comes from a JSONL file, a binary file or a generator that never writes one.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "traces/trace.h"

namespace inferscale {

/// @brief A trace's records in order, with the dense fact indices the reader assigns (the order
/// in which facts are declared).
class RecordStream {
 public:
  virtual ~RecordStream() = default;
  /// Next record into `out` (reused); false at the end.
  virtual bool next(TraceRecord& out) = 0;
  /// The header (defaults when the trace has none); valid after the first next().
  virtual const TraceHeader& header() const = 0;
  /// Dense indices of the last request's facts, in the request's order.
  virtual const std::vector<std::uint32_t>& request_fact_indices() const = 0;
  /// Dense index of fact `id` (declared so far), or 0xffffffff.
  virtual std::uint32_t dense_of(FactId id) const = 0;
  /// Facts declared so far.
  virtual std::uint64_t facts_declared() const = 0;
  /// Facts of the whole population (declared or not yet), when the stream knows it; else
  /// facts_declared().
  virtual std::uint64_t population_facts() const { return facts_declared(); }
  /// Records of the whole trace this stream left out before the last record it returned (a
  /// stream of some users' records only: SyntheticStream's keep_user); its position in the
  /// whole trace is the records returned before it plus this.
  virtual std::uint64_t records_omitted() const { return 0; }
  /// The records at the stream's start that a warm store inserts, counted from its first
  /// (the header and the facts it declares at t=0 before its first request), once the stream
  /// has returned a record past them; until then, and for a stream whose facts at t=0 before
  /// its first record of another kind are all of them, UINT64_MAX. A stream that declares some
  /// users' facts at t=0 only when they first ask (SyntheticStream::declare_at_start) says
  /// where its start ends.
  virtual std::uint64_t start_records() const { return UINT64_MAX; }
  /// How far the stream is, in [0, 1] (progress bars).
  virtual double fraction_read() const = 0;
  /// The file's path, or what produced the records.
  virtual const std::string& name() const = 0;
};

/// Told now and then by long work over a stream: the share read (fraction_read) and the
/// records handled so far (progress lines).
using StreamProgressFn = std::function<void(double fraction, std::uint64_t records)>;

/// The records copy_records wrote, by kind (`records` counts them all, the header too).
struct RecordCounts {
  std::uint64_t records = 0, facts = 0, memory_writes = 0, requests = 0;
};

/// Writes every record of `in` to `w` (TraceWriter or BinaryTraceWriter; not closed), telling
/// `progress` (when set) every 65,536 records and at the end.
template <class Writer>
RecordCounts copy_records(RecordStream& in, Writer& w, const StreamProgressFn& progress = {}) {
  TraceRecord rec;
  RecordCounts n;
  while (in.next(rec)) {
    switch (rec.kind) {
      case RecordKind::kHeader:
        w.write(rec.header);
        break;
      case RecordKind::kFact:
        w.write_fact(rec.fact, false);
        ++n.facts;
        break;
      case RecordKind::kMemoryWrite:
        w.write_fact(rec.fact, true);
        ++n.memory_writes;
        break;
      case RecordKind::kRequest:
        w.write(rec.request);
        ++n.requests;
        break;
    }
    if ((++n.records & 0xffff) == 0 && progress) progress(in.fraction_read(), n.records);
  }
  if (progress) progress(1.0, n.records);
  return n;
}

/// Opens a trace file, JSONL or binary (told apart by the binary format's magic bytes).
/// `fast_parse` false: JSONL lines all take the general parser (TraceReader).
std::unique_ptr<RecordStream> open_trace(const std::string& path, bool fast_parse = true);

}  // namespace inferscale
