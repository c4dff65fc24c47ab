#include "sim/warm_window.h"

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
  const std::uint64_t capacities = add(
      s.gpu.capacity_bytes,
      add(s.host.enabled ? s.host.capacity_bytes : 0, s.disk.enabled ? s.disk.capacity_bytes : 0));
  const std::uint64_t need = add(capacities, add(capacities, capacities));
  std::vector<std::uint64_t> given(replicas, 0);
  const std::uint64_t bytes_per_token = run.fact_kv_bytes_per_token_per_gpu();
  SyntheticUsers users(o);
  int short_of = replicas;  // replicas given less than they need
  for (std::uint64_t u = o.users; u-- > 0 && short_of > 0;) {
    const int r = w.home.owner(u);
    if (given[r] >= need) continue;
    for (const std::uint32_t tokens : users.static_tokens(u)) {
      given[r] +=
          std::uint64_t(tokens + kBlockTokens - 1) / kBlockTokens * kBlockTokens * bytes_per_token;
    }
    w.start[r] = u;
    w.first = u;
    if (given[r] >= need) --short_of;
  }
  return w;
}

}  // namespace inferscale
