#pragma once
// @brief import_locomo: turns LoCoMo into a trace: N users (replicas of its speakers), their
// facts as memory writes at the sessions' dates, their questions as requests that retrieve the
// top-k facts with BM25. traces/README.md documents every rule.

#include <cstdint>
#include <string>
#include <vector>

#include "traces/locomo.h"
#include "traces/workload.h"
#include "traces/writer.h"

namespace inferscale {

struct LocomoImportOptions {
  std::uint64_t users = 20;              // user i: conversation i % C, speaker (i / C) % 2
  std::uint32_t questions_per_user = 0;  // 0: all of the user's questions, in file order
  std::uint32_t k = 50;  // facts retrieved per request (fewer if the user has fewer)
  double tokens_per_word = 1.3;
  std::uint32_t output_tokens = 50;
  std::uint64_t seed = 1;
  std::uint32_t max_context_turns = 64;  // context_tokens entries per fact
  std::vector<int> categories = {1, 2, 3, 4, 5};
  double history_span_s = 0;  // memory writes: each conversation's dates mapped onto [0, span]
  double start_s = -1;        // first request time; < 0: history_span_s
  ArrivalOptions arrival;
  bool text = true;  // write fact and question text
  // Facts as `fact` records at t=0 (memory built before the trace: precomputed, as in the
  // published design) instead of memory writes at the sessions' dates.
  bool initial_memory = false;
};

struct LocomoImportResult {
  std::uint64_t users = 0;
  std::uint64_t facts = 0;  // memory writes
  std::uint64_t requests = 0;
  std::uint64_t users_without_questions = 0;
};

/// Checks the options; InputError("--option", what is expected) on a bad value.
void validate_locomo_options(const LocomoImportOptions& o);
/// Writes the trace (header, memory writes and requests in time order) to `out`.
LocomoImportResult import_locomo(const LocomoData& data, const LocomoImportOptions& o,
                                 TraceWriter& out);

}  // namespace inferscale
