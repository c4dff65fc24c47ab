// Replica: the tiers below its GPU. Hits there (looked up, read into host memory over the
// node's links, promoted, copied to the GPU asynchronously), write-through of encodes, and the
// host evictions a real executor is told of. The node's tiers themselves are sim/node_store.h.
#include <algorithm>

#include "sim/replica.h"
#include "traces/error.h"

namespace inferscale {

void Replica::take_host_evictions() {
  auto& evicted = node_->host_evicted();
  for (const FactId g : evicted) {
    const std::uint32_t b = host_evicted_bit(g);
    host_evicted_bits_[b / 64] |= std::uint64_t{1} << (b % 64);
  }
  plan_.host_evictions.insert(plan_.host_evictions.end(), evicted.begin(), evicted.end());
  evicted.clear();
}

void Replica::write_through(FactId global, SimTime now) {
  if (!node_ || cfg_.store.gpu.write != WritePolicy::kThrough) return;
  node_->set_acting(this);
  const std::uint64_t bytes = move_bytes(facts_.tokens(global).tokens);
  if (node_->demote(global, TierLevel::kGpu, now) == NodeStore::Demotion::kWritten) {
    // Copied out once the encode is done: beside the compute, on the device-to-host engine
    // (no plan entry: the offload of a fact the same step encodes would come before it).
    if (load_cost_) d2h_free_at_ = std::max(d2h_free_at_, now) + load_cost_(bytes);
    node_->flow(TierLevel::kGpu).bytes_out += bytes;
  }
  take_host_evictions();
}

/// A hit below the GPU: copy into the GPU pool (or straight into the request's cache when the
/// pool has no unpinned room).
bool Replica::lower_hit(FactId global, RequestFact& f, SimTime now) {
  node_->set_acting(this);
  const TierLevel t = node_->lookup(global, now);
  if (t == TierLevel::kGpu) return false;
  f.source = t == TierLevel::kHost   ? FactSource::kHostHit
             : t == TierLevel::kDisk ? FactSource::kDiskHit
                                     : FactSource::kRemoteHit;
  return true;
}

void Replica::promote_from_lower(Request& r, RequestFact& f, SimTime now, bool host_sync) {
  const FactTokens& info = facts_.tokens(f.global);
  const std::uint64_t bytes = move_bytes(info.tokens);
  const TierLevel from = f.source == FactSource::kHostHit   ? TierLevel::kHost
                         : f.source == FactSource::kDiskHit ? TierLevel::kDisk
                                                            : TierLevel::kRemote;
  const bool async = from != TierLevel::kHost || (host_async_ && !host_sync);
  node_->set_acting(this);
  // Into host memory first (a disk or network read; promotions into the tiers above it).
  const SimTime in_host = node_->fetch(f.global, from, bytes, now);
  take_host_evictions();
  async_copy_ = async;  // the victims' offloads go to the other copy engine
  const bool placed = insert_gpu(f.global, f.local, now, false);
  async_copy_ = false;
  if (placed) {
    const FactLoad load{f.global, info.tokens, bytes, kNoRequest, 0};
    if (async) {
      // The host-to-device copy engine runs the loads one after another, in the order they
      // were issued, each after the offloads issued before it (its blocks may be theirs) and
      // once its data is in host memory.
      INFERSCALE_ASSERT(load_cost_, "asynchronous loads without a load price");
      copy_free_at_ = std::max({copy_free_at_, now, d2h_free_at_, in_host}) + load_cost_(bytes);
      r.loads_ready = std::max(r.loads_ready, copy_free_at_);
      async_ready_[f.local] = copy_free_at_;
      plan_.async_loads.push_back(load);
      node_->count_load(from, bytes, now, copy_free_at_);
    } else {
      plan_.loads.push_back(load);
      node_->count_load(from, bytes, now, now);  // inside the step: its time is the step's
    }
    pin(r, f);
  } else {
    // Straight into the request's cache in this step; from disk or the network its prefill
    // also waits for the read into host memory.
    plan_.loads.push_back(
        FactLoad{f.global, info.tokens, bytes, r.id, f.position, r.prompt_tokens});
    f.private_kv = true;
    if (in_host > now) r.loads_ready = std::max(r.loads_ready, in_host);
    node_->count_load(from, bytes, now, in_host);
  }
  node_->flow(TierLevel::kGpu).bytes_in += bytes;
  ++stats_.loads;
}

}  // namespace inferscale
