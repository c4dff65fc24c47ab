#pragma once
// @brief A trace re-sized for a load: the users and requests of a source trace (a JSONL file,
// or LoCoMo imported once per speaker) copied onto a population of any size and re-timed to a
// rate. What the capacity planner probes when its load is LoCoMo itself or a trace file
// (docs/plan.md, "Load"; traces/README.md documents the rules).

#include <cstdint>
#include <string>
#include <vector>

#include "traces/trace.h"
#include "traces/writer.h"

namespace inferscale {

/// A source trace in memory: users, facts and requests renumbered densely.
struct SourceTrace {
  std::string path;
  TraceHeader header;
  std::vector<FactRecord> facts;                       // by dense index (id: the dense index)
  std::vector<std::vector<std::uint32_t>> user_facts;  // dense user -> its facts' dense indices
  std::vector<RequestRecord> requests;  // file order; user and facts renumbered densely
  std::string digest;                   // 64-bit FNV-1a of the file's bytes, 16 hex digits
  /// Means over the requests: what the planner's analytic bound reads.
  double mean_query_tokens = 0, mean_output_tokens = 0, mean_fact_tokens_per_request = 0;
  double mean_facts_per_request = 0;
  double mean_facts_per_user = 0, mean_fact_tokens = 0;
  std::uint64_t users() const { return user_facts.size(); }
};

/// Reads `path` whole (facts and memory writes alike). InputError at the file when it has no
/// request, or from the reader at the faulty line.
SourceTrace read_source_trace(const std::string& path);

struct ScaleOptions {
  std::uint64_t users = 1;     // the population
  std::uint64_t requests = 1;  // requests to write
  double rate_per_s = 1;       // their arrival rate
  double cv = 1;               // of the gaps (1: Poisson; gamma otherwise)
  std::uint64_t seed = 1;
};

/// Writes `src` re-sized: population user u is a copy of source user u mod F (F: the source's
/// users), with its own fact ids; request i is source request i mod R, asked by a copy of its
/// user drawn uniformly, at the i-th arrival of the rate. Every fact (memory writes too) is
/// known at t=0; only the users who ask get their facts written. InputError("users") when no
/// source user below `users` asks anything.
void write_scaled_trace(const SourceTrace& src, const ScaleOptions& o, TraceWriter& out);

}  // namespace inferscale
