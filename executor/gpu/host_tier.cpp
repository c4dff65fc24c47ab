#include "executor/gpu/host_tier.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace inferscale {

HostTier::HostTier(const FactPool& pool, std::uint64_t chunk_bytes) {
  const at::Tensor& s = pool.storage();
  chunk_shape_.assign(s.sizes().begin(), s.sizes().end());
  const std::uint64_t block_bytes = std::uint64_t(s[0].numel()) * s.element_size();
  chunk_shape_[0] = std::int64_t(std::max<std::uint64_t>(1, chunk_bytes / block_bytes));
  options_ = s.options().device(at::kCPU).pinned_memory(s.is_cuda());
}

const HostTier::Entry* HostTier::find(FactId fact) const {
  const auto it = facts_.find(fact);
  return it == facts_.end() ? nullptr : &it->second;
}

at::Tensor HostTier::block(std::int32_t id) const {
  const std::int64_t per_chunk = chunk_shape_[0];
  return chunks_[std::size_t(id / per_chunk)].select(0, id % per_chunk);
}

void HostTier::add_chunk() {
  // Its blocks are handed out in increasing order.
  const auto first = std::int32_t(std::int64_t(chunks_.size()) * chunk_shape_[0]);
  chunks_.push_back(at::empty(chunk_shape_, options_));
  for (std::int32_t i = std::int32_t(chunk_shape_[0]) - 1; i >= 0; --i) free_.push_back(first + i);
}

void HostTier::reserve(std::uint64_t bytes) {
  while (reserved_bytes() < bytes) add_chunk();
}

void HostTier::store(FactId fact, const FactPool::Entry& from, FactPool& pool) {
  erase(fact);
  Entry e;
  e.tokens = from.tokens;
  e.encode_position = from.encode_position;
  for (const std::int32_t b : from.blocks) {
    if (free_.empty()) add_chunk();
    const std::int32_t h = free_.back();
    free_.pop_back();
    block(h).copy_(pool.storage().select(0, b), /*non_blocking=*/true);
    e.blocks.push_back(h);
  }
  facts_[fact] = std::move(e);
}

void HostTier::load(const Entry& from, const FactPool::Entry& to, FactPool& pool) const {
  if (from.blocks.size() != to.blocks.size()) {
    throw std::invalid_argument("host tier: a copy of " + std::to_string(from.blocks.size()) +
                                " blocks into a pool entry of " + std::to_string(to.blocks.size()));
  }
  for (std::size_t i = 0; i < from.blocks.size(); ++i) {
    pool.storage().select(0, to.blocks[i]).copy_(block(from.blocks[i]), /*non_blocking=*/true);
  }
}

bool HostTier::erase(FactId fact) {
  const auto it = facts_.find(fact);
  if (it == facts_.end()) return false;
  for (auto b = it->second.blocks.rbegin(); b != it->second.blocks.rend(); ++b) free_.push_back(*b);
  facts_.erase(it);
  return true;
}

std::uint64_t HostTier::reserved_bytes() const {
  std::uint64_t n = 0;
  for (const at::Tensor& c : chunks_) n += std::uint64_t(c.numel()) * c.element_size();
  return n;
}

}  // namespace inferscale
