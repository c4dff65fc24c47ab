#pragma once
// @brief Trace records (the JSONL schema of traces/README.md) as C++ values.

#include <cstdint>
#include <string>
#include <vector>

#include "traces/types.h"

namespace inferscale {

enum class ArrivalMode { kOpen, kClosedLoop };

/// Optional first record: what produced the trace and how requests arrive.
struct TraceHeader {
  int version = 1;
  std::string source;           // "locomo", "synthetic", ...
  ArrivalMode arrival = ArrivalMode::kOpen;
  std::uint32_t concurrency = 0;  // closed loop: users with a request in flight at most
  SimTime think_time_ns = 0;      // closed loop: pause between a user's answer and next question
  double tokens_per_word = 0;     // how token counts were made (0: unknown)
  std::uint32_t k = 0;            // facts retrieved per request (upper bound)
  std::string description;
};

/// QA metadata of a LoCoMo request, kept so retrieval and answers can be judged.
struct QaInfo {
  int category = 0;  // 1..5; 0: none
  std::string answer;
  std::vector<std::string> evidence;  // dia_ids, e.g. "D1:3"
};

/// A fact (`fact`: exists from the start) or a memory write (`memory_write`: appears at `time`
/// and must be encoded before it can be injected).
struct FactRecord {
  FactId id = 0;
  UserId user = 0;
  std::uint32_t tokens = 0;
  SimTime time = 0;
  std::string text;    // optional
  std::string source;  // optional: the turn it came from, e.g. "D1:3"
  std::int32_t session = -1;  // optional
  /// Optional: token counts of the conversation turns before the source turn, nearest first
  /// (Context-Window Encoding with window w prefixes the first w of them).
  std::vector<std::uint32_t> context_tokens;
};

struct RequestRecord {
  RequestId id = 0;
  UserId user = 0;
  SimTime time = 0;  // arrival (open loop) or earliest issue time (closed loop)
  std::uint32_t query_tokens = 0;
  std::uint32_t output_tokens = 0;
  std::vector<FactId> facts;  // retrieved, ranked: best LAST (closest to the query)
  std::string text;           // optional
  QaInfo qa;                  // optional (category 0: absent)
};

enum class RecordKind { kHeader, kFact, kMemoryWrite, kRequest };

/// One line of a trace. The reader reuses one of these, so vectors keep their capacity.
struct TraceRecord {
  RecordKind kind = RecordKind::kFact;
  TraceHeader header;
  FactRecord fact;        // kFact and kMemoryWrite
  RequestRecord request;  // kRequest
  SimTime time() const {
    return kind == RecordKind::kRequest ? request.time
           : kind == RecordKind::kHeader ? 0
                                         : fact.time;
  }
};

}  // namespace inferscale
