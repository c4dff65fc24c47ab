#pragma once
// @brief The host side of one forward pass: its tokens, positions, cache rows, pool rows and
// attention segments, flattened (segments sorted by their first cache row) and uploaded in one
// copy.

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "executor/gpu/device_ops.h"

namespace inferscale {

/// Device-side inputs of LlamaModel::forward.
struct ForwardInputs {
  std::int64_t tokens = 0;
  at::Tensor token_ids;    // [tokens] int32
  at::Tensor positions;    // [tokens] int32, composed positions
  at::Tensor cache_slots;  // [tokens] int32, KV cache rows written
  at::Tensor pool_slots;   // [tokens] int32, -1: not stored; undefined: none stored
  at::Tensor sample_rows;  // [samples] int32, rows whose logits are computed, in output order
  std::int64_t samples = 0;
  /// The forward's attention: one batch, or (split_rows > 0) two: the short segments, rows
  /// [0, split_rows), for split-KV, then the long ones, rows [split_rows, tokens), in attn_long.
  AttentionBatch attn;
  AttentionBatch attn_long;
  std::int64_t split_rows = 0;
  /// The one uploaded int32 tensor that every device tensor above views.
  at::Tensor buffer;

  /// The same inputs viewing `other` (a tensor of buffer's size) instead of buffer.
  ForwardInputs on(const at::Tensor& other) const;
  /// Everything but the buffer's contents that the pass's launches depend on (a CUDA graph's
  /// key, DeviceOps::run_forward).
  std::string shape() const;
};

class ForwardBatch {
 public:
  /// Adds a segment: `token_ids` at contiguous composed positions starting at `position`, of a
  /// sequence whose KV cache rows start at `region_start` (row = region_start + position). After
  /// it the sequence has position + n keys. `pool_slots` is empty or one per token (-1: not
  /// stored). `sample` >= 0 asks for the logits of the segment's last token as output `sample`.
  void add(std::int32_t region_start, std::int32_t position,
           const std::vector<std::int32_t>& token_ids, const std::vector<std::int32_t>& pool_slots,
           std::int32_t sample);
  /// Adds `n` one-token segments at position 0 of the sequences whose cache rows start at
  /// rows_start, rows_start + 1, ... (their keys land there; nothing samples them): padding, so
  /// that passes of nearby sizes share their matrix products' row count.
  void pad(std::int32_t n, std::int32_t rows_start);
  std::int64_t tokens() const { return tokens_; }
  bool empty() const { return segments_.empty(); }
  /// Flattens and uploads. `cache_rows`: rows of the KV cache (the last k_start entry). When
  /// the ops' split-KV policy wants the short segments but some segment is too long for it (a
  /// prefill chunk among decodes), the short segments come first and attention runs in two
  /// calls: otherwise one long segment would send every decode of the step to flash attention.
  ForwardInputs finalize(DeviceOps& ops, std::int32_t cache_rows) const;

 private:
  struct Segment {
    std::int32_t region_start, position;
    std::vector<std::int32_t> ids, pool_slots;
    std::int32_t sample;
  };
  std::vector<Segment> segments_;
  std::int64_t tokens_ = 0;
  std::int32_t samples_ = 0;
};

}  // namespace inferscale
