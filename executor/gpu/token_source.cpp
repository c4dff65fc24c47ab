#include "executor/gpu/token_source.h"

namespace inferscale {

namespace {

// splitmix64 finalizer: a well-mixed 64-bit hash of a 64-bit input.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

enum Kind : std::uint64_t { kHeader = 1, kFooter = 2, kFact = 3, kContext = 4, kQuery = 5 };

}  // namespace

std::vector<std::int32_t> SyntheticTokenSource::hashed(std::uint64_t kind, std::uint64_t id,
                                                       std::uint32_t n) const {
  std::vector<std::int32_t> out(n);
  const std::uint64_t base = mix(mix(seed_ ^ kind) ^ id);
  for (std::uint32_t i = 0; i < n; ++i) out[i] = std::int32_t(mix(base + i) % vocab_);
  return out;
}

std::vector<std::int32_t> SyntheticTokenSource::header(std::uint32_t n) {
  return hashed(kHeader, 0, n);
}
std::vector<std::int32_t> SyntheticTokenSource::footer(std::uint32_t n) {
  return hashed(kFooter, 0, n);
}
std::vector<std::int32_t> SyntheticTokenSource::fact(FactId fact, std::uint32_t n) {
  return hashed(kFact, fact, n);
}
std::vector<std::int32_t> SyntheticTokenSource::context(FactId fact, std::uint32_t n) {
  return hashed(kContext, fact, n);
}
std::vector<std::int32_t> SyntheticTokenSource::query(RequestId request, std::uint32_t n) {
  return hashed(kQuery, request, n);
}

}  // namespace inferscale
