#pragma once
// @brief The GPU fact pool: fact KV in 16-token blocks inside one device tensor, with a
// capacity in bytes. The simulator's store and policies decide what is resident; the pool
// obeys (allocate, free) and reports its usage. A reserved area beyond the capacity holds the
// replica's header KV and transient fact KV (encoded or loaded for one request, not admitted).

#include <ATen/ATen.h>

#include <cstdint>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "executor/model_config.h"
#include "kernels/params.h"
#include "kernels/reference/kv_quant.h"
#include "traces/types.h"

namespace inferscale {

/// Raised when the pool has too few free blocks for an allocation.
class PoolFullError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class FactPool {
 public:
  /// One resident piece of KV: its blocks, its tokens, and (delta mode) the position its K was
  /// rotated to when it was encoded.
  struct Entry {
    std::vector<std::int32_t> blocks;
    std::uint32_t tokens = 0;
    std::int32_t encode_position = 0;
    /// Pool slot of the entry's i-th token.
    std::int32_t slot(std::uint32_t i) const {
      return blocks[i / kBlockTokens] * std::int32_t(kBlockTokens) + std::int32_t(i % kBlockTokens);
    }
  };

  /// `capacity_bytes` of fact blocks plus `reserved_tokens` rounded up to whole blocks.
  FactPool(const ModelConfig& model, std::uint64_t capacity_bytes, std::uint32_t reserved_tokens,
           const at::TensorOptions& options);

  /// Bytes of one block: every layer's K and V of kBlockTokens tokens.
  static std::uint64_t block_bytes(const ModelConfig& model, std::uint32_t dtype_bytes);

  const Entry* find(FactId fact) const;
  /// Allocates blocks for a fact (replacing an existing entry). Throws PoolFullError.
  const Entry& allocate(FactId fact, std::uint32_t tokens, std::int32_t encode_position);
  /// Stores the blocks of `entries` in format `f` and loads them back (kv_quant_round_trip):
  /// what injection reads after the fact KV was kept in that format.
  void round_trip(const std::vector<const Entry*>& entries, KvFormat f);
  /// Frees a fact's blocks; false when it was not resident.
  bool free(FactId fact);

  /// The reserved area: keys are the caller's (headers, transient entries).
  const Entry* find_reserved(std::uint64_t key) const;
  const Entry& allocate_reserved(std::uint64_t key, std::uint32_t tokens,
                                 std::int32_t encode_position);
  bool free_reserved(std::uint64_t key);

  std::uint64_t capacity_bytes() const { return std::uint64_t(fact_blocks_) * block_bytes_; }
  std::uint64_t used_bytes() const {
    return std::uint64_t(fact_blocks_ - std::int64_t(free_facts_.size())) * block_bytes_;
  }
  std::size_t resident_facts() const { return facts_.size(); }
  std::int32_t free_blocks() const { return std::int32_t(free_facts_.size()); }

  /// [num_blocks, layers, 2 (K, V), kBlockTokens, kv_heads, head_dim]
  at::Tensor& storage() { return storage_; }
  const at::Tensor& storage() const { return storage_; }
  /// The kernels' view of all layers (InjectParams::pool).
  PoolView view();
  /// The kernels' view of one layer (KvAppendParams::pool).
  PoolView layer_view(std::uint32_t layer);
  /// Whether the reserved area has room for an entry of `tokens` now.
  bool reserved_fits(std::uint32_t tokens) const {
    return free_reserved_.size() >= (tokens + kBlockTokens - 1) / kBlockTokens;
  }

 private:
  Entry take(std::vector<std::int32_t>& free_list, std::uint32_t tokens,
             std::int32_t encode_position, const char* what);

  ModelConfig model_;
  std::uint64_t block_bytes_;
  std::int32_t fact_blocks_;
  at::Tensor storage_;
  std::vector<std::int32_t> free_facts_, free_reserved_;  // stacks of free block ids
  std::unordered_map<FactId, Entry> facts_;
  std::unordered_map<std::uint64_t, Entry> reserved_;
};

}  // namespace inferscale
