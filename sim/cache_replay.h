#pragma once
// @brief Cache replay: a trace's requests through one store tier, without the scheduler or the
// executor, for miss-ratio curves. For each request, in trace order: look up its facts, pin
// them, insert the misses (admission and eviction decide), unpin.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "policies/params.h"
#include "sim/access_oracle.h"
#include "sim/store_tier.h"

namespace inferscale {

/// What a replay needs of a trace, by dense fact id (the reader's declaration order).
struct ReplayTrace {
  std::vector<std::uint32_t> fact_tokens;
  std::vector<std::uint32_t> fact_context_tokens;  // the first w context turns (CWE window w)
  std::vector<UserId> fact_user;
  std::vector<SimTime> fact_created;
  std::vector<UserId> request_user;
  std::vector<SimTime> request_time;
  std::vector<std::uint64_t> request_offsets{0};  // [requests + 1] into request_facts
  std::vector<FactId> request_facts;              // distinct within a request

  /// Reads a trace file (InputError on a bad trace); `cwe_window` turns of context count in the
  /// encode cost.
  static ReplayTrace read(const std::string& path, std::uint32_t cwe_window);

  std::size_t fact_count() const { return fact_tokens.size(); }
  std::size_t request_count() const { return request_time.size(); }
  std::span<const FactId> facts_of(std::size_t request) const {
    return {request_facts.data() + request_offsets[request],
            request_facts.data() + request_offsets[request + 1]};
  }
  /// The requests' fact lists, for AccessOracle.
  std::vector<std::vector<FactId>> request_fact_lists() const;
  /// Sum over all facts of tokens (every fact's KV at once).
  std::uint64_t total_fact_tokens() const;
};

struct ReplayOptions {
  std::string eviction = "lru";
  Params eviction_params;
  std::string admission = "always";
  Params admission_params;
  std::uint64_t capacity_bytes = 0;
  std::uint64_t kv_bytes_per_token = 131072;  // Llama-3.1-8B, bf16
  /// Recompute (encode) cost: fixed + per token of fact and CWE context.
  SimTime encode_fixed_ns = 0;
  SimTime encode_ns_per_token = 27'000;
  std::uint64_t seed = 1;
};

struct ReplayResult {
  TierStats stats;
  double lookup_cost_ns = 0;  // recompute cost of every fact looked up
  double miss_cost_ns = 0;    // recompute cost of the misses
  /// Share of the recompute cost that missed (what cost-aware policies minimise).
  double cost_miss_ratio() const { return lookup_cost_ns > 0 ? miss_cost_ns / lookup_cost_ns : 0; }
  double object_miss_ratio() const {
    return stats.lookups ? 1.0 - double(stats.hits) / double(stats.lookups) : 0.0;
  }
  double byte_miss_ratio() const {
    return stats.lookup_bytes ? 1.0 - double(stats.hit_bytes) / double(stats.lookup_bytes) : 0.0;
  }
};

/// Replays `trace` through one tier. `oracle` is required by offline policies (else InputError).
ReplayResult replay_cache(const ReplayTrace& trace, const AccessOracle* oracle,
                          const ReplayOptions& options);

}  // namespace inferscale
