#pragma once
// @brief Host-side building of paged attention contexts (PagedKvView): runs of keys cut into
// pages. Plain C++: the executor builds its block tables with it and the CPU tests check it.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/params.h"

namespace inferscale {

/// Appends pages for `tokens` keys read from consecutive rows starting at `row` (cache rows for
/// kCache, pool slots otherwise), rotated from `position` (pre-RoPE: the composed position of
/// the run's first key; delta: the signed shift of every key). Pages hold up to
/// kPagedKvPageKeys keys and never cross a pool block of `block_tokens` slots; only a run's
/// last page (or one before a block boundary) is partial.
inline void paged_kv_add_run(std::vector<PagedKvEntry>& pages, PagedKvKind kind, std::int32_t row,
                             std::int32_t tokens, std::int32_t position,
                             std::int32_t block_tokens) {
  std::int32_t done = 0;
  while (done < tokens) {
    std::int32_t n = std::min(kPagedKvPageKeys, tokens - done);
    if (kind != PagedKvKind::kCache) {
      n = std::min(n, block_tokens - (row + done) % block_tokens);
    }
    PagedKvEntry e;
    e.row = row + done;
    e.tokens = n;
    e.position = kind == PagedKvKind::kPoolPreRope ? position + done : position;
    e.kind = kind;
    pages.push_back(e);
    done += n;
  }
}

/// Keys a segment of these pages has in page space: 16 per page but the last, which counts its
/// tokens (SplitKvAttentionParams::k_used of a paged segment).
inline std::int32_t paged_kv_keys(const PagedKvEntry* first, const PagedKvEntry* last) {
  if (first == last) return 0;
  return std::int32_t(last - first - 1) * kPagedKvPageKeys + (last - 1)->tokens;
}

}  // namespace inferscale
