#pragma once
// @brief The executor's host tier: fact KV offloaded from the GPU fact pool, in blocks of the
// pool's shape inside page-locked host chunks that are allocated as the tier grows and reused
// after. Copies in both directions go through DeviceOps::copy (on CUDA: asynchronous, on the
// compute stream or in a batch of asynchronous copies; page-locked memory is what lets a copy
// run at PCIe speed without stalling a stream) and move only the rows of a block's tokens that
// the fact uses; the host never reads the blocks itself, so the streams' order and the copy
// tickets are all the synchronization they need.

#include <ATen/ATen.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "executor/gpu/device_ops.h"
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
  /// Blocks in the chunks held: at most as many facts.
  std::size_t block_count() const { return std::size_t(reserved_bytes() / block_bytes_); }
  /// Sizes the fact map for a fact per block held, so that no store makes it grow.
  void reserve_entries();

  const Entry* find(FactId fact) const;
  /// Copies a pool entry into host blocks (replacing an earlier copy of the fact).
  void store(FactId fact, const FactPool::Entry& from, FactPool& pool, DeviceOps& ops);
  /// Copies a host entry into a pool entry of as many blocks (the rows of its tokens; the
  /// rest of a last, partly used block is left as it was).
  void load(const Entry& from, const FactPool::Entry& to, FactPool& pool, DeviceOps& ops) const;
  /// Drops a fact's copy; false when there was none. Its blocks are reused by later stores,
  /// which the stream orders after any copy still reading them.
  bool erase(FactId fact);

  /// Starts the asynchronous copy lanes and their first copies before any measured step: one
  /// block of the pool to the host and back through begin_copies()/end_copies(), then
  /// drain_copies(). The pool's block 0 ends as it began; call it while no step is in flight.
  void warm_copies(FactPool& pool, DeviceOps& ops);

  std::size_t facts() const { return facts_.size(); }
  /// Host bytes held in chunks (page-locked on a GPU machine).
  std::uint64_t reserved_bytes() const;

 private:
  char* block(std::int32_t id) const;
  void add_chunk();
  /// Block `b` of the pool's storage.
  char* pool_block(FactPool& pool, std::int32_t b) const;
  /// Tokens of a `tokens`-token fact in its block `i`.
  std::uint32_t tokens_in_block(std::uint32_t tokens, std::size_t i) const;
  /// The copy of a block's first `used_tokens` tokens between two blocks of the pool's shape.
  void copy_block(char* dst, const char* src, std::uint32_t used_tokens, DeviceOps& ops) const;

  std::vector<std::int64_t> chunk_shape_;  // [chunk_blocks, layers, 2, block tokens, ...]
  std::size_t block_bytes_ = 0;
  std::size_t token_bytes_ = 0;  // one token's row of one layer's K or V
  at::TensorOptions options_;
  std::vector<at::Tensor> chunks_;
  std::vector<std::int32_t> free_;  // stack of free block ids
  std::unordered_map<FactId, Entry> facts_;
};

}  // namespace inferscale
