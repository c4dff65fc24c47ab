#include "executor/gpu/forward_batch.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace inferscale {

void ForwardBatch::add(std::int32_t region_start, std::int32_t position,
                       const std::vector<std::int32_t>& token_ids,
                       const std::vector<std::int32_t>& pool_slots, std::int32_t sample) {
  if (token_ids.empty()) return;
  if (!pool_slots.empty() && pool_slots.size() != token_ids.size()) {
    throw std::invalid_argument("ForwardBatch::add: one pool slot per token");
  }
  segments_.push_back(Segment{region_start, position, token_ids, pool_slots, sample});
  tokens_ += std::int64_t(token_ids.size());
  if (sample >= 0) samples_ = std::max(samples_, sample + 1);
}

ForwardInputs ForwardBatch::finalize(DeviceOps& ops, std::int32_t cache_rows) const {
  // Segments sorted by first cache row (stable: a request's segments keep their order).
  std::vector<std::size_t> order(segments_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return segments_[a].region_start < segments_[b].region_start;
  });
  const std::size_t n = std::size_t(tokens_), s = segments_.size();
  bool any_pool = false;
  for (const Segment& g : segments_) any_pool |= !g.pool_slots.empty();

  // One host buffer: ids | positions | cache rows | pool rows | cu_q | k_start | k_used | samples
  std::vector<std::int32_t> buf;
  buf.reserve(4 * n + 3 * s + 2 + std::size_t(samples_));
  std::vector<std::int32_t> ids, pos, rows, pools, sample_rows(std::size_t(samples_), -1);
  ids.reserve(n);
  pos.reserve(n);
  rows.reserve(n);
  if (any_pool) pools.reserve(n);
  AttentionBatch attn;
  attn.segments = std::int32_t(s);
  attn.host_cu_q.push_back(0);
  for (std::size_t i : order) {
    const Segment& g = segments_[i];
    const std::int32_t len = std::int32_t(g.ids.size());
    for (std::int32_t t = 0; t < len; ++t) {
      ids.push_back(g.ids[t]);
      pos.push_back(g.position + t);
      rows.push_back(g.region_start + g.position + t);
      if (any_pool) pools.push_back(g.pool_slots.empty() ? -1 : g.pool_slots[t]);
    }
    if (g.sample >= 0) sample_rows[std::size_t(g.sample)] = std::int32_t(ids.size()) - 1;
    attn.host_cu_q.push_back(std::int32_t(ids.size()));
    attn.host_k_start.push_back(g.region_start);
    attn.host_k_used.push_back(g.position + len);
    attn.max_q = std::max(attn.max_q, len);
    attn.max_k = std::max(attn.max_k, g.position + len);
  }
  attn.host_k_start.push_back(cache_rows);
  for (std::int32_t r : sample_rows) {
    if (r < 0) throw std::invalid_argument("ForwardBatch: an output index has no segment");
  }

  const std::size_t o_pos = n, o_rows = 2 * n, o_pool = 3 * n;
  const std::size_t o_cu = o_pool + pools.size(), o_ks = o_cu + s + 1, o_ku = o_ks + s + 1,
                    o_smp = o_ku + s;
  buf.insert(buf.end(), ids.begin(), ids.end());
  buf.insert(buf.end(), pos.begin(), pos.end());
  buf.insert(buf.end(), rows.begin(), rows.end());
  buf.insert(buf.end(), pools.begin(), pools.end());
  buf.insert(buf.end(), attn.host_cu_q.begin(), attn.host_cu_q.end());
  buf.insert(buf.end(), attn.host_k_start.begin(), attn.host_k_start.end());
  buf.insert(buf.end(), attn.host_k_used.begin(), attn.host_k_used.end());
  buf.insert(buf.end(), sample_rows.begin(), sample_rows.end());
  const at::Tensor dev = ops.upload(buf);

  ForwardInputs in;
  in.tokens = tokens_;
  in.samples = samples_;
  in.token_ids = dev.narrow(0, 0, std::int64_t(n));
  in.positions = dev.narrow(0, std::int64_t(o_pos), std::int64_t(n));
  in.cache_slots = dev.narrow(0, std::int64_t(o_rows), std::int64_t(n));
  if (any_pool) in.pool_slots = dev.narrow(0, std::int64_t(o_pool), std::int64_t(n));
  attn.cu_q = dev.narrow(0, std::int64_t(o_cu), std::int64_t(s + 1));
  attn.k_start = dev.narrow(0, std::int64_t(o_ks), std::int64_t(s + 1));
  attn.k_used = dev.narrow(0, std::int64_t(o_ku), std::int64_t(s));
  in.sample_rows = dev.narrow(0, std::int64_t(o_smp), std::int64_t(samples_));
  in.attn = std::move(attn);
  return in;
}

}  // namespace inferscale
