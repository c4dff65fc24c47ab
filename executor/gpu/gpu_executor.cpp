// GpuExecutor: construction, request state and the forward passes outside a step (the order
// of a step: gpu_executor_step.cpp).
#include "executor/gpu/gpu_executor.h"
#include "executor/gpu/host_trace.h"
#include "executor/gpu/torch_compat.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace inferscale {

namespace {

at::ScalarType torch_dtype(DType t) {
  switch (t) {
    case DType::kF32:
      return at::kFloat;
    case DType::kBF16:
      return at::kBFloat16;
    case DType::kF16:
      return at::kHalf;
  }
  return at::kFloat;
}

}  // namespace

GpuExecutor::GpuExecutor(GpuExecutorOptions options)
    : options_(std::move(options)), rows_(std::int32_t(options_.kv_cache_tokens)) {
  c10::InferenceMode guard;
  compat::install_warning_handler();
  HostTrace trace("host setup:");
  // Traced, each part's device work is waited for, so that its point counts it.
  auto traced = [&](const char* point) {
    if (trace.on()) ops_->clock().synchronize();
    trace.at(point);
  };
  if (options_.device == "cuda") {
    ops_ = make_cuda_ops();
  } else if (options_.device == "cpu") {
    ops_ = make_cpu_ops();
  } else {
    throw std::invalid_argument("GpuExecutor: device must be cuda or cpu, got " + options_.device);
  }
  ops_->set_split_kv(options_.split_kv);
  ops_->set_cuda_graphs(options_.cuda_graphs);
  ops_->set_blas(options_.blas);
  if (options_.copy_inflight_mb == 0) {
    throw std::invalid_argument("GpuExecutor: copy_inflight_mb must be at least 1");
  }
  ops_->set_copy_inflight_bytes(std::size_t(options_.copy_inflight_mb) << 20);
  if (options_.device == "cuda") {
    use_programmatic_launch(options_.programmatic_launch);
  }
  traced("ops");
  const ModelConfig& m = options_.model;
  tokens_ = options_.tokens ? options_.tokens
                            : std::make_shared<SyntheticTokenSource>(m.vocab, options_.seed);
  auto loader =
      options_.weights ? options_.weights : std::make_shared<RandomWeightLoader>(options_.seed);
  const auto opts = at::TensorOptions().dtype(torch_dtype(options_.dtype)).device(ops_->device());
  const std::int32_t rope_rows =
      options_.rope_positions > 0 ? options_.rope_positions
                                  : std::int32_t(std::min<std::uint32_t>(m.max_positions, 32768));
  model_ = std::make_unique<LlamaModel>(m, loader->load(m, opts), *ops_,
                                        opts.dtype().toScalarType(), rope_rows);
  traced("weights");
  pool_ = std::make_unique<FactPool>(m, options_.pool_bytes, options_.reserved_pool_tokens, opts);
  traced("pool");
  host_tier_ = std::make_unique<HostTier>(*pool_);
  host_tier_->reserve(options_.host_bytes);
  traced("host_tier");
  // The tier's fact map and the offload tickets' map sized for a fact per tier block up front:
  // grown by stores instead, they rehashed in the middle of a step's offloads (at 200 users,
  // 2.3 ms of host time in the first step after the first wave on the H200).
  host_tier_->reserve_entries();
  host_write_ticket_.reserve(host_tier_->block_count());
  traced("maps");
  cache_ = model_->make_cache(std::int32_t(options_.kv_cache_tokens));
  traced("cache");
  trace.note("pool_mb=" + std::to_string(options_.pool_bytes >> 20) +
             " host_mb=" + std::to_string(options_.host_bytes >> 20) +
             " cache_tokens=" + std::to_string(options_.kv_cache_tokens));
  // No pass has more than max_batch_tokens tokens (encodes are cut to it): warmed up to there,
  // none needs padding.
  padding_ =
      RowPadding::of_executor(options_.warm_rows, options_.max_batch_tokens, options_.row_bucket);
  if (padding_.above > 0) pad_rows_start_ = alloc_rows(std::int32_t(padding_.bucket) - 1);
}

void GpuExecutor::pad(ForwardBatch& batch) const {
  const auto rows = padding_.rows(std::uint64_t(batch.tokens()));
  if (rows > 0) batch.pad(std::int32_t(rows), pad_rows_start_);
}

GpuExecutor::~GpuExecutor() {
  // Copies still in flight read or write the pool and the host tier, which go first.
  if (ops_) ops_->drain_copies();
}

std::string GpuExecutor::name() const {
  return "gpu(" + ops_->device_name() + ", " + options_.model.name + ")";
}

void GpuExecutor::check_position(std::int64_t position) const {
  if (position >= model_->rope_positions()) {
    throw std::invalid_argument("position " + std::to_string(position) +
                                " is outside the rotary table (" +
                                std::to_string(model_->rope_positions()) + " rows)");
  }
}

std::int32_t GpuExecutor::alloc_rows(std::int32_t rows) {
  const std::int32_t start = rows_.allocate(rows);
  if (start < 0) {
    throw std::runtime_error("KV cache full: " + std::to_string(rows) +
                             " rows needed, largest "
                             "free range " +
                             std::to_string(rows_.largest_free()) + " of " +
                             std::to_string(rows_.rows()));
  }
  return start;
}

GpuExecutor::RequestState& GpuExecutor::new_request(RequestId request,
                                                    std::uint32_t prompt_tokens) {
  RequestState s;
  s.capacity = std::int32_t(prompt_tokens + options_.decode_reserve_tokens);
  s.region_start = alloc_rows(s.capacity);
  s.prompt_tokens = prompt_tokens;
  return requests_[request] = s;
}

GpuExecutor::RequestState& GpuExecutor::start_request(const PrefillItem& item) {
  const auto it = requests_.find(item.request);
  if (it == requests_.end()) return new_request(item.request, item.prompt_tokens);
  RequestState& s = it->second;
  if (!s.awaiting_first_chunk || s.prompt_tokens != item.prompt_tokens) {
    throw std::invalid_argument("plan: request " + std::to_string(item.request) +
                                " starts (first_chunk) but is already running");
  }
  s.awaiting_first_chunk = false;
  return s;
}

GpuExecutor::RequestState& GpuExecutor::private_target(RequestId request,
                                                       std::uint32_t prompt_tokens) {
  const auto it = requests_.find(request);
  if (it != requests_.end()) return it->second;
  if (prompt_tokens == 0) {
    throw std::invalid_argument("plan: KV for request " + std::to_string(request) +
                                ", which is not running, names no prompt_tokens");
  }
  RequestState& s = new_request(request, prompt_tokens);
  s.awaiting_first_chunk = true;
  return s;
}

GpuExecutor::RequestState& GpuExecutor::state(RequestId request) {
  const auto it = requests_.find(request);
  if (it == requests_.end()) {
    throw std::invalid_argument("plan: request " + std::to_string(request) + " is not running");
  }
  return it->second;
}

void GpuExecutor::grow_region(RequestState& s, std::uint32_t rows) {
  const std::int32_t capacity = std::max<std::int32_t>(
      std::int32_t(rows), s.capacity + std::int32_t(options_.decode_reserve_tokens));
  const std::int32_t start = alloc_rows(capacity);
  const std::int64_t used = s.next_position;
  cache_.k.narrow(1, start, used).copy_(cache_.k.narrow(1, s.region_start, used));
  cache_.v.narrow(1, start, used).copy_(cache_.v.narrow(1, s.region_start, used));
  rows_.free(s.region_start, s.capacity);
  s.region_start = start;
  s.capacity = capacity;
}

std::vector<std::int32_t> GpuExecutor::piece_tokens(const PromptPiece& piece, RequestId request) {
  switch (piece.kind) {
    case PromptPiece::Kind::kHeader:
      return tokens_->header(piece.tokens);
    case PromptPiece::Kind::kFact:
      return tokens_->fact(piece.fact, piece.tokens);
    case PromptPiece::Kind::kFooter:
      return tokens_->footer(piece.tokens);
    case PromptPiece::Kind::kQuery:
      return tokens_->query(request, piece.tokens);
  }
  return {};
}

std::pair<at::Tensor, at::Tensor> GpuExecutor::request_kv(RequestId request,
                                                          std::uint32_t n) const {
  const auto it = requests_.find(request);
  if (it == requests_.end()) throw std::invalid_argument("request_kv: request not running");
  const std::int64_t start = it->second.region_start;
  return {cache_.k.narrow(1, start, n).to(at::kCPU), cache_.v.narrow(1, start, n).to(at::kCPU)};
}

at::Tensor GpuExecutor::request_keys(RequestId request, std::uint32_t layer,
                                     std::uint32_t n) const {
  const auto it = requests_.find(request);
  if (it == requests_.end()) throw std::invalid_argument("request_keys: request not running");
  return cache_.k.select(0, layer).narrow(0, it->second.region_start, n);
}

at::Tensor GpuExecutor::scratch_forward(std::int32_t start, std::int32_t position,
                                        const std::vector<std::int32_t>& ids) {
  ForwardBatch batch;
  batch.add(start, position, ids, {}, 0);
  return model_->forward(batch.finalize(*ops_, cache_.rows()), cache_, nullptr, false);
}

at::Tensor GpuExecutor::prefill_logits(const std::vector<std::int32_t>& tokens) {
  c10::InferenceMode guard;
  const std::int32_t start = alloc_rows(std::int32_t(tokens.size()));
  const at::Tensor logits = scratch_forward(start, 0, tokens);
  rows_.free(start, std::int32_t(tokens.size()));
  return logits.select(0, 0).to(at::kFloat).to(at::kCPU);
}

void GpuExecutor::settle_device() {
  if (!(options_.settle_ms > 0)) return;
  HostTrace trace("host settle:");
  const std::int32_t n = std::min<std::int32_t>(1024, std::int32_t(cache_.rows()) / 8);
  if (n < 1) return;
  const std::int32_t start = alloc_rows(n);
  const std::vector<std::int32_t> ids(std::size_t(n), 1);
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() <
         options_.settle_ms) {
    (void)scratch_forward(start, 0, ids);
    ops_->clock().synchronize();
  }
  rows_.free(start, n);
  trace.at("passes");
  // The step's idle gap (counted where copies were in flight) starts after the passes.
  ops_->clock().reset();
  ops_->clock().mark();
}

void GpuExecutor::warm_up() {
  // A prefill of a whole step's token budget, then one token over its keys: the GEMMs, the
  // sampling and both attention paths (flash or math for the prefill, split-KV for the token)
  // run once, and the allocator grows to the largest step's activations (a first step larger
  // than the warm-up paid about 5 ms of allocations on an H200).
  c10::InferenceMode guard;
  HostTrace trace("host warm-up:");
  const std::int32_t n = std::min<std::int32_t>(std::int32_t(options_.max_batch_tokens),
                                                std::int32_t(cache_.rows()) / 4);
  if (n < 2) return;
  std::vector<std::int32_t> ids(std::size_t(n), 0);
  for (std::int32_t i = 0; i < n; ++i) ids[std::size_t(i)] = i % std::int32_t(options_.model.vocab);
  const std::int32_t start = alloc_rows(n + 1);
  (void)scratch_forward(start, 0, ids);
  const at::Tensor logits = scratch_forward(start, n, {ids[0]});
  (void)ops_->to_host(ops_->argmax_rows(logits));
  trace.at("passes");
  // With a host tier, start both copy lanes now (their streams, threads and events, the first
  // use of libtorch's stream pool, a first copy each way); otherwise the first step with
  // asynchronous copies would start them while the device waits for its first launch.
  if (options_.host_bytes > 0) host_tier_->warm_copies(*pool_, *ops_);
  trace.at("copies");
  const std::uint32_t bucket = padding_.above > 0 ? padding_.bucket : 0;
  model_->warm_products(std::int32_t(std::min(options_.warm_rows, options_.max_batch_tokens)),
                        std::int32_t(bucket), std::int32_t(options_.max_batch_tokens));
  ops_->clock().synchronize();
  trace.at("products");
  rows_.free(start, n + 1);
}

}  // namespace inferscale
