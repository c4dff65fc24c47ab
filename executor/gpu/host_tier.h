#pragma once
// @brief The executor's host tier: fact KV offloaded from the GPU fact pool, in blocks of the
// pool's shape inside page-locked host chunks that are allocated as the tier grows and reused
// after. Copies in both directions are asynchronous on the current stream (page-locked memory
// is what lets a copy run at PCIe speed without stalling the stream); the host never reads the
// blocks itself, so stream order is all the synchronization they need.

#include <ATen/ATen.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "executor/gpu/fact_pool.h"
#include "traces/types.h"

namespace inferscale {

class HostTier {
 public:
  struct Entry {
    std::vector<std::int32_t> blocks;  // host block ids
    std::uint32_t tokens = 0;
    std::int32_t encode_position = 0;
  };

  /// Blocks shaped like `pool`'s, in chunks of about `chunk_bytes` (page-locked when the pool
  /// is on a GPU).
  explicit HostTier(const FactPool& pool, std::uint64_t chunk_bytes = 256ull << 20);

  /// Allocates chunks until the tier holds at least `bytes` (whole chunks).
  void reserve(std::uint64_t bytes);

  const Entry* find(FactId fact) const;
  /// Copies a pool entry into host blocks (replacing an earlier copy of the fact).
  void store(FactId fact, const FactPool::Entry& from, FactPool& pool);
  /// Copies a host entry into a pool entry of as many blocks.
  void load(const Entry& from, const FactPool::Entry& to, FactPool& pool) const;
  /// Drops a fact's copy; false when there was none. Its blocks are reused by later stores,
  /// which the stream orders after any copy still reading them.
  bool erase(FactId fact);

  std::size_t facts() const { return facts_.size(); }
  /// Host bytes held in chunks (page-locked on a GPU machine).
  std::uint64_t reserved_bytes() const;

 private:
  at::Tensor block(std::int32_t id) const;
  void add_chunk();

  std::vector<std::int64_t> chunk_shape_;  // [chunk_blocks, pool block shape...]
  at::TensorOptions options_;
  std::vector<at::Tensor> chunks_;
  std::vector<std::int32_t> free_;  // stack of free block ids
  std::unordered_map<FactId, Entry> facts_;
};

}  // namespace inferscale
