#include "executor/gpu/forward_batch.h"

#include <algorithm>
#include <cstdio>
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

void ForwardBatch::pad(std::int32_t n, std::int32_t rows_start) {
  for (std::int32_t i = 0; i < n; ++i) add(rows_start + i, 0, {0}, {}, -1);
}

ForwardInputs ForwardBatch::finalize(DeviceOps& ops, std::int32_t cache_rows) const {
  // Split into short and long segments when split-KV wants the short ones and a long one would
  // otherwise take the whole batch to flash attention.
  const SplitKvPolicy& policy = ops.split_kv();
  auto is_short = [&](const Segment& g) {
    return std::int32_t(g.ids.size()) <= policy.max_query_tokens;
  };
  bool any_long = false;
  std::int32_t short_max_k = 0, short_segments = 0;
  for (const Segment& g : segments_) {
    if (is_short(g)) {
      ++short_segments;
      short_max_k = std::max(short_max_k, g.position + std::int32_t(g.ids.size()));
    } else {
      any_long = true;
    }
  }
  const bool split =
      policy.enabled && any_long && short_segments > 0 && short_max_k >= policy.min_context_tokens;
  // Segments sorted by first cache row within each group (stable: a request's segments keep
  // their order); with a split, the short group first.
  std::vector<std::size_t> order(segments_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const Segment &x = segments_[a], &y = segments_[b];
    if (split && is_short(x) != is_short(y)) return is_short(x);
    return x.region_start < y.region_start;
  });
  const std::size_t n = std::size_t(tokens_), s = segments_.size();
  bool any_pool = false;
  for (const Segment& g : segments_) any_pool |= !g.pool_slots.empty();

  std::vector<std::int32_t> ids, pos, rows, pools, sample_rows(std::size_t(samples_), -1);
  ids.reserve(n);
  pos.reserve(n);
  rows.reserve(n);
  if (any_pool) pools.reserve(n);
  AttentionBatch groups[2];
  std::int64_t split_rows = 0;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const Segment& g = segments_[order[k]];
    const bool second = split && std::int32_t(k) >= short_segments;
    if (second && split_rows == 0) split_rows = std::int64_t(ids.size());
    AttentionBatch& a = groups[second ? 1 : 0];
    if (a.host_cu_q.empty()) a.host_cu_q.push_back(0);
    const std::int32_t len = std::int32_t(g.ids.size());
    for (std::int32_t t = 0; t < len; ++t) {
      ids.push_back(g.ids[t]);
      pos.push_back(g.position + t);
      rows.push_back(g.region_start + g.position + t);
      if (any_pool) pools.push_back(g.pool_slots.empty() ? -1 : g.pool_slots[t]);
    }
    if (g.sample >= 0) sample_rows[std::size_t(g.sample)] = std::int32_t(ids.size()) - 1;
    a.host_cu_q.push_back(std::int32_t(ids.size() - std::size_t(second ? split_rows : 0)));
    a.host_k_start.push_back(g.region_start);
    a.host_k_used.push_back(g.position + len);
    a.max_q = std::max(a.max_q, len);
    a.max_k = std::max(a.max_k, g.position + len);
    ++a.segments;
  }
  for (std::int32_t r : sample_rows) {
    if (r < 0) throw std::invalid_argument("ForwardBatch: an output index has no segment");
  }
  // A pass that may run as a CUDA graph: the longest context rounded up (the kernels read each
  // segment's own length), so that consecutive decode steps share a shape.
  const CudaGraphPolicy& graphs = ops.cuda_graphs();
  if (graphs.enabled && graphs.key_bucket > 1 && tokens_ <= graphs.max_tokens &&
      ops.device().is_cuda()) {
    for (AttentionBatch& a : groups) {
      a.max_k = (a.max_k + graphs.key_bucket - 1) / graphs.key_bucket * graphs.key_bucket;
    }
  }

  // One host buffer: ids | positions | cache rows | pool rows | samples | per attention group:
  // cu_q | k_start | k_used
  std::vector<std::int32_t> buf;
  buf.reserve(4 * n + 3 * s + 4 + std::size_t(samples_));
  buf.insert(buf.end(), ids.begin(), ids.end());
  buf.insert(buf.end(), pos.begin(), pos.end());
  buf.insert(buf.end(), rows.begin(), rows.end());
  buf.insert(buf.end(), pools.begin(), pools.end());
  buf.insert(buf.end(), sample_rows.begin(), sample_rows.end());
  std::size_t group_offset[2] = {0, 0};
  const int used_groups = split ? 2 : 1;
  for (int i = 0; i < used_groups; ++i) {
    AttentionBatch& a = groups[i];
    if (a.host_cu_q.empty()) a.host_cu_q.push_back(0);  // an empty forward
    a.host_k_start.push_back(cache_rows);
    group_offset[i] = buf.size();
    buf.insert(buf.end(), a.host_cu_q.begin(), a.host_cu_q.end());
    buf.insert(buf.end(), a.host_k_start.begin(), a.host_k_start.end());
    buf.insert(buf.end(), a.host_k_used.begin(), a.host_k_used.end());
  }
  const at::Tensor dev = ops.upload(buf);

  ForwardInputs in;
  in.buffer = dev;
  in.tokens = tokens_;
  in.samples = samples_;
  const std::size_t o_pos = n, o_rows = 2 * n, o_pool = 3 * n, o_smp = o_pool + pools.size();
  in.token_ids = dev.narrow(0, 0, std::int64_t(n));
  in.positions = dev.narrow(0, std::int64_t(o_pos), std::int64_t(n));
  in.cache_slots = dev.narrow(0, std::int64_t(o_rows), std::int64_t(n));
  if (any_pool) in.pool_slots = dev.narrow(0, std::int64_t(o_pool), std::int64_t(n));
  in.sample_rows = dev.narrow(0, std::int64_t(o_smp), std::int64_t(samples_));
  for (int i = 0; i < used_groups; ++i) {
    AttentionBatch& a = groups[i];
    const std::int64_t segs = a.segments, o = std::int64_t(group_offset[i]);
    a.cu_q = dev.narrow(0, o, segs + 1);
    a.k_start = dev.narrow(0, o + segs + 1, segs + 1);
    a.k_used = dev.narrow(0, o + 2 * (segs + 1), segs);
  }
  in.attn = std::move(groups[0]);
  if (split) {
    in.attn_long = std::move(groups[1]);
    in.split_rows = split_rows;
  }
  return in;
}

ForwardInputs ForwardInputs::on(const at::Tensor& other) const {
  if (other.numel() != buffer.numel()) {
    throw std::invalid_argument("ForwardInputs::on: a buffer of another size");
  }
  const std::int64_t base = buffer.storage_offset();
  auto view = [&](const at::Tensor& t) {
    return t.defined() ? other.narrow(0, t.storage_offset() - base, t.size(0)) : at::Tensor();
  };
  auto batch = [&](const AttentionBatch& a) {
    AttentionBatch b = a;
    b.cu_q = view(a.cu_q);
    b.k_start = view(a.k_start);
    b.k_used = view(a.k_used);
    return b;
  };
  ForwardInputs in = *this;
  in.buffer = other;
  in.token_ids = view(token_ids);
  in.positions = view(positions);
  in.cache_slots = view(cache_slots);
  in.pool_slots = view(pool_slots);
  in.sample_rows = view(sample_rows);
  in.attn = batch(attn);
  in.attn_long = batch(attn_long);
  return in;
}

std::string ForwardInputs::shape() const {
  char key[256];
  std::snprintf(key, sizeof key, "t%lld s%lld p%d b%lld r%lld a%d,%d,%d l%d,%d,%d",
                static_cast<long long>(tokens), static_cast<long long>(samples),
                int(pool_slots.defined()), static_cast<long long>(buffer.numel()),
                static_cast<long long>(split_rows), attn.segments, attn.max_q, attn.max_k,
                attn_long.segments, attn_long.max_q, attn_long.max_k);
  return key;
}

}  // namespace inferscale
