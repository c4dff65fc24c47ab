#include "executor/gpu/host_tier.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace inferscale {

HostTier::HostTier(const FactPool& pool, std::uint64_t chunk_bytes) {
  const at::Tensor& s = pool.storage();
  chunk_shape_.assign(s.sizes().begin(), s.sizes().end());
  block_bytes_ = std::size_t(s[0].numel()) * s.element_size();
  token_bytes_ = block_bytes_ / std::size_t(s.size(1) * s.size(2) * s.size(3));
  chunk_shape_[0] = std::int64_t(std::max<std::uint64_t>(1, chunk_bytes / block_bytes_));
  options_ = s.options().device(at::kCPU).pinned_memory(s.is_cuda());
}

const HostTier::Entry* HostTier::find(FactId fact) const {
  const auto it = facts_.find(fact);
  return it == facts_.end() ? nullptr : &it->second;
}

char* HostTier::block(std::int32_t id) const {
  const std::int64_t per_chunk = chunk_shape_[0];
  return static_cast<char*>(chunks_[std::size_t(id / per_chunk)].data_ptr()) +
         std::size_t(id % per_chunk) * block_bytes_;
}

char* HostTier::pool_block(FactPool& pool, std::int32_t b) const {
  return static_cast<char*>(pool.storage().data_ptr()) + std::size_t(b) * block_bytes_;
}

std::uint32_t HostTier::tokens_in_block(std::uint32_t tokens, std::size_t i) const {
  const auto block_tokens = std::uint32_t(chunk_shape_[3]);
  return std::min<std::uint32_t>(block_tokens, tokens - std::uint32_t(i) * block_tokens);
}

void HostTier::copy_block(char* dst, const char* src, std::uint32_t used_tokens,
                          DeviceOps& ops) const {
  const auto block_tokens = std::uint32_t(chunk_shape_[3]);
  DeviceOps::CopyRegion r;
  r.dst = dst;
  r.src = src;
  if (used_tokens >= block_tokens) {
    r.row_bytes = block_bytes_;  // the whole block at once
  } else {
    // One row per layer's K and V: the used tokens' part of each.
    r.row_bytes = used_tokens * token_bytes_;
    r.rows = std::size_t(chunk_shape_[1] * chunk_shape_[2]);
    r.pitch = block_tokens * token_bytes_;
  }
  ops.copy(r);
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

void HostTier::reserve_entries() {
  facts_.reserve(block_count());
}

void HostTier::store(FactId fact, const FactPool::Entry& from, FactPool& pool, DeviceOps& ops) {
  erase(fact);
  Entry e;
  e.tokens = from.tokens;
  e.encode_position = from.encode_position;
  for (std::size_t i = 0; i < from.blocks.size(); ++i) {
    if (free_.empty()) add_chunk();
    const std::int32_t h = free_.back();
    free_.pop_back();
    copy_block(block(h), pool_block(pool, from.blocks[i]), tokens_in_block(from.tokens, i), ops);
    e.blocks.push_back(h);
  }
  facts_[fact] = std::move(e);
}

void HostTier::load(const Entry& from, const FactPool::Entry& to, FactPool& pool,
                    DeviceOps& ops) const {
  if (from.blocks.size() != to.blocks.size() || from.tokens > to.tokens) {
    throw std::invalid_argument(
        "host tier: a copy of " + std::to_string(from.blocks.size()) + " blocks (" +
        std::to_string(from.tokens) + " tokens) into a pool entry of " +
        std::to_string(to.blocks.size()) + " (" + std::to_string(to.tokens) + " tokens)");
  }
  for (std::size_t i = 0; i < from.blocks.size(); ++i) {
    copy_block(pool_block(pool, to.blocks[i]), block(from.blocks[i]),
               tokens_in_block(from.tokens, i), ops);
  }
}

void HostTier::warm_copies(FactPool& pool, DeviceOps& ops) {
  if (pool.storage().size(0) == 0) return;
  if (free_.empty()) add_chunk();
  char* host = block(free_.back());
  char* device = pool_block(pool, 0);
  const auto block_tokens = std::uint32_t(chunk_shape_[3]);
  ops.begin_copies(DeviceOps::CopyDirection::kToHost);
  copy_block(host, device, block_tokens, ops);
  const std::uint64_t offloaded = ops.end_copies();
  ops.begin_copies(DeviceOps::CopyDirection::kToDevice);
  ops.wait_copies(offloaded);
  copy_block(device, host, block_tokens, ops);
  (void)ops.end_copies();
  ops.drain_copies();
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
