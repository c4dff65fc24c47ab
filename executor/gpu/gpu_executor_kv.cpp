// GpuExecutor: fact KV movement. The host tier (offload, load), Context-Window Encoding into
// the pool, the replica's header KV, and the fused injection of pool KV into request caches.
#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

#include "executor/gpu/gpu_executor.h"

namespace inferscale {

namespace {

// Reserved-area keys: headers by length, transient entries by a counter.
constexpr std::uint64_t kHeaderKey = 1ull << 62;
constexpr std::uint64_t kTransientKey = 2ull << 62;
// Asynchronous loads and offloads go to the copy engine in batches of this many facts, each
// with its own ticket: a prefill waits only for the batches that hold its facts, and a load
// only for the offload batch that frees its blocks.
constexpr std::size_t kCopyChunk = 16;

/// Host time by part (the host trace's offload issue): lap(part) adds the time since the last
/// lap, or since restart(), to `part`; nothing, not even a clock read, when off.
class Laps {
 public:
  explicit Laps(bool on) : on_(on) { restart(); }
  void restart() {
    if (on_) since_ = std::chrono::steady_clock::now();
  }
  void lap(std::int64_t& part) {
    if (!on_) return;
    const auto now = std::chrono::steady_clock::now();
    part += std::chrono::duration_cast<std::chrono::nanoseconds>(now - since_).count();
    since_ = now;
  }

 private:
  bool on_;
  std::chrono::steady_clock::time_point since_;
};

}  // namespace

std::uint64_t GpuExecutor::transient_key() {
  const std::uint64_t key = kTransientKey | next_transient_++;
  transients_.push_back(key);
  return key;
}

void GpuExecutor::free_transients() {
  for (std::uint64_t key : transients_) pool_->free_reserved(key);
  transients_.clear();
}

const FactPool::Entry& GpuExecutor::allocate_transient(std::uint32_t tokens,
                                                       std::int32_t encode_position,
                                                       Injections& inj) {
  if (!pool_->reserved_fits(tokens)) flush_injections(inj);  // room from this step's transients
  return pool_->allocate_reserved(transient_key(), tokens, encode_position);
}

void GpuExecutor::flush_injections(Injections& inj) {
  launch_injections(inj, upload_injections(inj));
  inj = Injections();
  free_transients();  // later writes to their blocks are ordered after the launch
}

void GpuExecutor::settle(FactId fact) {
  const auto it = pending_loads_.find(fact);
  if (it == pending_loads_.end()) return;
  ops_->wait_copies(it->second);
  pending_loads_.erase(it);
}

void GpuExecutor::settle_offloads() {
  if (last_offload_ticket_ != 0 && !ops_->copies_done(last_offload_ticket_)) {
    ops_->wait_copies(last_offload_ticket_);
  }
}

void GpuExecutor::issue_async_offloads(const std::vector<FactLoad>& offloads) {
  if (block_offload_ticket_.empty()) block_offload_ticket_.assign(pool_->storage().size(0), 0);
  OffloadIssueParts& parts = offload_parts_;
  for (std::size_t i = 0; i < offloads.size(); i += kCopyChunk) {
    const std::size_t n = std::min(kCopyChunk, offloads.size() - i);
    Laps laps(parts.on);
    ops_->begin_copies(DeviceOps::CopyDirection::kToHost);
    laps.lap(parts.begin);
    for (std::size_t j = i; j < i + n; ++j) offload(offloads[j].fact);  // times its own parts
    laps.restart();
    const std::uint64_t ticket = ops_->end_copies();
    laps.lap(parts.end);
    for (std::size_t j = i; j < i + n; ++j) {
      const FactPool::Entry* e = pool_->find(offloads[j].fact);
      if (e == nullptr) continue;
      for (const std::int32_t b : e->blocks) block_offload_ticket_[std::size_t(b)] = ticket;
      host_write_ticket_[offloads[j].fact] = ticket;
    }
    last_offload_ticket_ = ticket;
    laps.lap(parts.tickets);
  }
}

void GpuExecutor::issue_async_loads(const std::vector<FactLoad>& loads, Injections& inj,
                                    std::vector<PendingEncode>& fallback) {
  for (const FactLoad& l : loads) {
    if (l.for_request != kNoRequest) {
      throw std::invalid_argument("plan: an asynchronous load of fact " + std::to_string(l.fact) +
                                  " names a request");
    }
  }
  // On the host-to-device copy stream, after this step's offloads and evictions were issued;
  // nothing of this step waits for them (a prefill that injects one does, see execute()). In the
  // plan's order (the order its requests were admitted), a ticket per kCopyChunk facts.
  for (std::size_t i = 0; i < loads.size(); i += kCopyChunk) {
    const std::size_t end = std::min(loads.size(), i + kCopyChunk);
    ops_->begin_copies(DeviceOps::CopyDirection::kToDevice);
    std::uint64_t waited = 0;
    for (std::size_t j = i; j < end; ++j) {
      const FactLoad& l = loads[j];
      const HostTier::Entry* h = host_tier_->find(l.fact);
      if (h == nullptr) {
        load(l, inj, fallback);  // encoded instead, on the compute stream later
        continue;
      }
      const FactPool::Entry& e = pool_->allocate(l.fact, h->tokens, h->encode_position);
      // Wait for the offloads that free these blocks, and for one that wrote this host copy.
      std::uint64_t need = 0;
      if (!block_offload_ticket_.empty()) {
        for (const std::int32_t b : e.blocks) {
          need = std::max(need, block_offload_ticket_[std::size_t(b)]);
        }
      }
      if (const auto w = host_write_ticket_.find(l.fact); w != host_write_ticket_.end()) {
        need = std::max(need, w->second);
      }
      if (need > waited && !ops_->copies_done(need)) {
        ops_->wait_copies(need);
        waited = need;
      }
      host_tier_->load(*h, e, *pool_, *ops_);
    }
    const std::uint64_t ticket = ops_->end_copies();
    last_load_ticket_ = ticket;
    for (std::size_t j = i; j < end; ++j) {
      if (pool_->find(loads[j].fact) != nullptr) pending_loads_[loads[j].fact] = ticket;
    }
  }
}

void GpuExecutor::offload(FactId fact) {
  const FactPool::Entry* e = pool_->find(fact);
  if (e == nullptr) return;  // not resident here: nothing to copy
  Laps laps(offload_parts_.on);
  settle(fact);
  laps.lap(offload_parts_.settle);
  host_tier_->store(fact, *e, *pool_, *ops_);
  laps.lap(offload_parts_.store);
}

void GpuExecutor::load(const FactLoad& l, Injections& inj, std::vector<PendingEncode>& fallback) {
  const HostTier::Entry* h = host_tier_->find(l.fact);
  if (h == nullptr) {
    // The simulator's host tier holds KV this replica never offloaded (e.g. a tier filled at
    // start): produce it the only way possible, by encoding the fact alone.
    ++stats_.load_fallbacks;
    fallback.push_back({l.fact, l.tokens, 0, l.for_request == kNoRequest, l.for_request, l.position,
                        l.prompt_tokens});
    return;
  }
  const bool for_request = l.for_request != kNoRequest;
  if (for_request) private_target(l.for_request, l.prompt_tokens);
  const FactPool::Entry& e = for_request ? allocate_transient(h->tokens, h->encode_position, inj)
                                         : pool_->allocate(l.fact, h->tokens, h->encode_position);
  host_tier_->load(*h, e, *pool_, *ops_);
  if (for_request) add_injection(e, l.for_request, l.position, inj);
}

void GpuExecutor::ensure_header(std::uint32_t tokens, Injections& inj) {
  const std::uint64_t key = kHeaderKey | tokens;
  if (pool_->find_reserved(key) != nullptr) return;
  if (!pool_->reserved_fits(tokens)) flush_injections(inj);
  const FactPool::Entry& e = pool_->allocate_reserved(key, tokens, 0);
  std::vector<std::int32_t> slots(tokens);
  for (std::uint32_t i = 0; i < tokens; ++i) slots[i] = e.slot(i);
  check_position(tokens - 1);
  const std::int32_t start = alloc_rows(std::int32_t(tokens));
  ForwardBatch batch;
  batch.add(start, 0, tokens_->header(tokens), slots, -1);
  model_->forward(batch.finalize(*ops_, cache_.rows()), cache_, pool_.get(),
                  options_.rope == RopeMode::kDelta);
  rows_.free(start, std::int32_t(tokens));
  stats_.encoded_tokens += tokens;
}

void GpuExecutor::prepare_header(std::uint32_t tokens) {
  c10::InferenceMode guard;
  Injections none;
  ensure_header(tokens, none);
  ops_->clock().synchronize();
}

void GpuExecutor::run_encodes(const std::vector<PendingEncode>& encodes, Injections& inj) {
  // Each encode is its own sequence: w context tokens, then the fact, at positions 0 ..; only
  // the fact tokens' K and V are stored (rows of the context are scratch and dropped).
  ForwardBatch batch;
  std::vector<std::pair<std::int32_t, std::int32_t>> scratch;  // cache rows to free
  std::vector<const FactPool::Entry*> stored;                  // kept in options_.fact_kv
  auto flush = [&] {
    if (batch.empty()) return;
    pad(batch);
    model_->forward(batch.finalize(*ops_, cache_.rows()), cache_, pool_.get(),
                    options_.rope == RopeMode::kDelta);
    pool_->round_trip(stored, options_.fact_kv);
    stored.clear();
    for (auto [start, n] : scratch) rows_.free(start, n);
    scratch.clear();
    batch = ForwardBatch();
  };
  for (const PendingEncode& enc : encodes) {
    const std::uint32_t n = enc.context_tokens + enc.tokens;
    if (batch.tokens() > 0 && batch.tokens() + n > options_.max_batch_tokens) flush();
    check_position(n - 1);
    const bool transient = !enc.store;
    if (transient && enc.for_request == kNoRequest) {
      throw std::invalid_argument("plan: encode of fact " + std::to_string(enc.fact) +
                                  " with store=false names no request");
    }
    if (transient) private_target(enc.for_request, enc.prompt_tokens);
    // Transients of this batch are injected after its forward: make room by running it first.
    if (transient && !pool_->reserved_fits(enc.tokens)) flush();
    const FactPool::Entry& e =
        transient ? allocate_transient(enc.tokens, std::int32_t(enc.context_tokens), inj)
                  : pool_->allocate(enc.fact, enc.tokens, std::int32_t(enc.context_tokens));
    std::vector<std::int32_t> ids = tokens_->context(enc.fact, enc.context_tokens);
    const std::vector<std::int32_t> fact_ids = tokens_->fact(enc.fact, enc.tokens);
    ids.insert(ids.end(), fact_ids.begin(), fact_ids.end());
    std::vector<std::int32_t> slots(n, -1);
    for (std::uint32_t i = 0; i < enc.tokens; ++i) slots[enc.context_tokens + i] = e.slot(i);
    const std::int32_t start = alloc_rows(std::int32_t(n));
    scratch.emplace_back(start, std::int32_t(n));
    batch.add(start, 0, ids, slots, -1);
    stats_.encoded_tokens += n;
    if (transient) {
      add_injection(e, enc.for_request, enc.position, inj);
    } else {
      stored.push_back(&e);
    }
  }
  flush();
}

void GpuExecutor::add_injection(const FactPool::Entry& e, RequestId request, std::uint32_t position,
                                Injections& inj) {
  const RequestState& s = state(request);
  if (position + e.tokens > std::uint32_t(s.capacity)) {
    throw std::invalid_argument("plan: injection past request " + std::to_string(request) +
                                "'s prompt");
  }
  check_position(position + e.tokens - 1);
  const bool delta = options_.rope == RopeMode::kDelta;
  for (std::uint32_t i = 0; i < e.tokens; ++i) {
    inj.src.push_back(e.slot(i));
    inj.dst.push_back(s.region_start + std::int32_t(position + i));
    // pre_rope: rotate to the composed position; delta: shift from the encode position.
    inj.pos.push_back(delta ? std::int32_t(position) - e.encode_position
                            : std::int32_t(position + i));
  }
  stats_.injected_tokens += e.tokens;
}

at::Tensor GpuExecutor::upload_injections(const Injections& inj) {
  if (inj.src.empty()) return at::Tensor();
  std::vector<std::int32_t> buf;
  buf.reserve(3 * inj.src.size());
  buf.insert(buf.end(), inj.src.begin(), inj.src.end());
  buf.insert(buf.end(), inj.dst.begin(), inj.dst.end());
  buf.insert(buf.end(), inj.pos.begin(), inj.pos.end());
  return ops_->upload(buf);
}

void GpuExecutor::launch_injections(const Injections& inj, const at::Tensor& dev) {
  if (inj.src.empty()) return;
  const std::int64_t n = std::int64_t(inj.src.size());
  const ModelConfig& m = options_.model;
  InjectParams p;
  p.pool = pool_->view();
  p.cache_k = cache_.k.data_ptr();
  p.cache_v = cache_.v.data_ptr();
  p.cache_layer_stride = cache_.k.stride(0);
  p.src_slots = dev.data_ptr<std::int32_t>();
  p.dst_slots = p.src_slots + n;
  p.positions = p.src_slots + 2 * n;
  p.table = model_->rope_table();
  p.tokens = std::int32_t(n);
  p.layers = std::int32_t(m.layers);
  p.kv_heads = std::int32_t(m.kv_heads);
  p.head_dim = std::int32_t(m.head_dim);
  p.dtype = kernel_dtype(model_->dtype());
  p.style = model_->rope_style();
  ops_->kv_inject(p);
}

}  // namespace inferscale
