#include "sim/warm_window.h"

#include <algorithm>
#include <cstdint>

namespace inferscale {

namespace {

/// A tier whose end state after a warm start depends only on the last facts it was given.
bool keeps_a_suffix(const TierConfig& t) {
  return !t.enabled || (t.eviction == "lru" && t.admission == "always");
}

}  // namespace

std::optional<WarmWindow> warm_window(const RunConfig& run, const SyntheticOptions& o) {
  const auto& s = run.store;
  if (!run.fast_paths || s.remote.enabled || !keeps_a_suffix(s.gpu) || !keeps_a_suffix(s.host) ||
      !keeps_a_suffix(s.disk)) {
    return std::nullopt;
  }
  const int replicas = static_cast<int>(run.replicas);
  WarmWindow w{HashRing(replicas), std::vector<std::uint64_t>(replicas, o.users), o.users};
  // Saturating: a capacity may be given as a huge number.
  auto add = [](std::uint64_t a, std::uint64_t b) {
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
  };
  const std::uint64_t gpu = s.gpu.capacity_bytes;
  const std::uint64_t host = s.host.enabled ? s.host.capacity_bytes : 0;
  const std::uint64_t disk = s.disk.enabled ? s.disk.capacity_bytes : 0;
  const std::uint64_t need = add(add(gpu, host), disk);
  std::vector<std::uint64_t> given(replicas, 0), largest(replicas, 0);
  const std::uint64_t bytes_per_token = run.fact_kv_bytes_per_token_per_gpu();
  SyntheticUsers users(o);
  // Given enough: beyond `need` by more than a fact (the header's argument), here four of its
  // largest.
  auto enough = [&](int r) { return given[r] >= add(need, 4 * largest[r]); };
  int short_of = replicas;  // replicas given less than they need
  for (std::uint64_t u = o.users; u-- > 0 && short_of > 0;) {
    const int r = w.home.owner(u);
    if (enough(r)) continue;
    for (const std::uint32_t tokens : users.static_tokens(u)) {
      const std::uint64_t bytes = blocks_of(tokens) * kBlockTokens * bytes_per_token;
      given[r] = add(given[r], bytes);
      largest[r] = std::max(largest[r], bytes);
    }
    w.start[r] = u;
    w.first = u;
    if (enough(r)) --short_of;
  }
  return w;
}

}  // namespace inferscale
