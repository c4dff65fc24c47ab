#pragma once
// @brief RowPadding: the GPU executor's rule for padding a forward pass to a multiple of a
// bucket of rows (GpuExecutorOptions::warm_rows, row_bucket), in one place for the executor that
// pads and the calibrated cost model that prices the padded rows.

#include <cstdint>

namespace inferscale {

/// A forward pass of more than `above` tokens computes up to the next multiple of `bucket` rows,
/// the extra rows one-token segments that nothing samples. above 0: no padding.
struct RowPadding {
  std::uint32_t above = 0;
  std::uint32_t bucket = 64;
  /// The padding of the GPU executor with these options (none where warm_rows is 0 or at least
  /// max_batch_tokens: every pass is then warmed).
  static RowPadding of_executor(std::uint32_t warm_rows, std::uint32_t max_batch_tokens,
                                std::uint32_t bucket = 64) {
    return warm_rows > 0 && warm_rows < max_batch_tokens && bucket > 1
               ? RowPadding{warm_rows, bucket}
               : RowPadding{};
  }
  /// Rows added to a pass of `tokens` tokens.
  std::uint64_t rows(std::uint64_t tokens) const {
    return above == 0 || tokens <= above ? 0 : (bucket - tokens % bucket) % bucket;
  }
};

}  // namespace inferscale
