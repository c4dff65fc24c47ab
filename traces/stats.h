#pragma once
// @brief trace_stats: one streaming pass over a trace that describes its population, sizes,
// arrivals and (for LoCoMo traces) retrieval recall. Memory grows with users and facts, never
// with requests.

#include <cstdint>
#include <string>

#include "traces/recall.h"
#include "traces/trace.h"

namespace inferscale {

struct StatsOptions {
  /// Fact KV bytes per token: 2 (K and V) * layers * kv_heads * head_dim * bytes per element.
  /// Default: Llama-3.1-8B in bf16 (2 * 32 * 8 * 128 * 2 = 131072).
  std::uint64_t kv_bytes_per_token = 131072;
};

/// min / mean / max of a quantity over n items (all 0 when n == 0).
struct Spread {
  std::uint64_t n = 0;
  double min = 0, mean = 0, max = 0;
};

struct TraceStats {
  std::string path;
  std::uint64_t bytes = 0;
  bool has_header = false;
  TraceHeader header;
  std::uint64_t users = 0;  // distinct users with a fact or a request
  std::uint64_t facts = 0;  // `fact` records
  std::uint64_t memory_writes = 0;
  std::uint64_t requests = 0;
  Spread k;                 // facts per request
  std::uint32_t k_p50 = 0;  // median (lower middle)
  Spread fact_tokens;       // per fact and memory write
  Spread facts_per_user;    // over users with at least one fact
  Spread fact_tokens_per_user;
  Spread fact_kv_bytes_per_user;
  std::uint64_t kv_bytes_per_token = 0;
  double total_fact_kv_bytes = 0;
  Spread requests_per_user;  // over users with at least one request
  Spread query_tokens, output_tokens;
  Spread context_turns;  // context_tokens entries, over facts that have them
  SimTime first_request_ns = 0, last_request_ns = 0;
  double arrival_rate_per_s = 0;  // requests / (last - first arrival); 0 when they coincide
  bool has_recall = false;        // QA evidence and fact sources present
  RecallReport recall;
};

/// Reads `path` once. InputError on a malformed trace (file:line:column).
TraceStats trace_stats(const std::string& path, const StatsOptions& options = {});
/// Human-readable report.
std::string stats_text(const TraceStats& s);
/// The same as one JSON object.
std::string stats_json(const TraceStats& s);

}  // namespace inferscale
