#pragma once
// A small synthetic LoCoMo-shaped trace for simulator tests: few users with about 12 facts each
// over 3-6 sessions, k = 8, memory writes from the last sessions unless `live_sessions` is 0.

#include <cstdint>
#include <filesystem>
#include <string>

#include "traces/synthetic.h"
#include "traces/writer.h"

namespace inferscale::test {

struct SmallTrace {
  std::uint64_t seed = 1;
  double rate = 100;  // requests per second (open loop)
  std::uint32_t users = 30;
  std::uint32_t requests = 300;
  std::uint32_t live_sessions = 2;  // sessions written during the run (memory writes)
  std::uint32_t output_tokens = 50;
  std::uint32_t closed_loop = 0;  // > 0: closed loop with this many users in flight
};

inline std::string small_trace(const std::filesystem::path& dir, const std::string& name,
                               const SmallTrace& t) {
  SyntheticOptions o;
  o.users = t.users;
  o.requests = t.requests;
  o.facts_per_user = 12;
  o.facts_per_user_spread = 4;
  o.sessions_min = 3;
  o.sessions_max = 6;
  o.live_sessions = t.live_sessions;
  o.k = 8;
  o.output_tokens = t.output_tokens;
  o.arrival.rate_per_s = t.rate;
  if (t.closed_loop > 0) {
    o.arrival.mode = ArrivalMode::kClosedLoop;
    o.arrival.concurrency = t.closed_loop;
  }
  o.seed = t.seed;
  const auto path = (dir / (name + std::to_string(t.seed) + ".jsonl")).string();
  TraceWriter w(path);
  generate_synthetic(o, w);
  w.close();
  return path;
}

}  // namespace inferscale::test
