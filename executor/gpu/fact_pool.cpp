#include "executor/gpu/fact_pool.h"

#include <string>

#include "executor/gpu/kv_quant.h"

namespace inferscale {

std::uint64_t FactPool::block_bytes(const ModelConfig& m, std::uint32_t dtype_bytes) {
  return 2ull * m.layers * kBlockTokens * m.kv_heads * m.head_dim * dtype_bytes;
}

void FactPool::round_trip(const std::vector<const Entry*>& entries, KvFormat f) {
  if (f == KvFormat::kNative || entries.empty()) return;
  std::vector<std::int64_t> blocks;
  for (const Entry* e : entries) blocks.insert(blocks.end(), e->blocks.begin(), e->blocks.end());
  const at::Tensor index = at::tensor(blocks, at::kLong).to(storage_.device());
  at::Tensor part = storage_.index_select(0, index);  // [n, layers, 2, block, kv_heads, head_dim]
  kv_quant_round_trip(part, f);
  storage_.index_copy_(0, index, part);
}

FactPool::FactPool(const ModelConfig& model, std::uint64_t capacity_bytes,
                   std::uint32_t reserved_tokens, const at::TensorOptions& options)
    : model_(model),
      block_bytes_(block_bytes(
          model, std::uint32_t(c10::elementSize(c10::typeMetaToScalarType(options.dtype()))))),
      fact_blocks_(std::int32_t(capacity_bytes / block_bytes_)) {
  const std::int32_t reserved = std::int32_t((reserved_tokens + kBlockTokens - 1) / kBlockTokens);
  storage_ =
      at::empty({fact_blocks_ + reserved, std::int64_t(model.layers), 2, std::int64_t(kBlockTokens),
                 std::int64_t(model.kv_heads), std::int64_t(model.head_dim)},
                options);
  // Stacks popped from the back: blocks are handed out in increasing order.
  for (std::int32_t b = fact_blocks_ - 1; b >= 0; --b) free_facts_.push_back(b);
  for (std::int32_t b = fact_blocks_ + reserved - 1; b >= fact_blocks_; --b) {
    free_reserved_.push_back(b);
  }
}

FactPool::Entry FactPool::take(std::vector<std::int32_t>& free_list, std::uint32_t tokens,
                               std::int32_t encode_position, const char* what) {
  const std::size_t need = (tokens + kBlockTokens - 1) / kBlockTokens;
  if (tokens == 0) throw std::invalid_argument("FactPool: an entry needs at least one token");
  if (free_list.size() < need) {
    throw PoolFullError(std::string("fact pool: ") + what + " area full (" + std::to_string(need) +
                        " blocks needed, " + std::to_string(free_list.size()) + " free)");
  }
  Entry e;
  e.tokens = tokens;
  e.encode_position = encode_position;
  for (std::size_t i = 0; i < need; ++i) {
    e.blocks.push_back(free_list.back());
    free_list.pop_back();
  }
  return e;
}

const FactPool::Entry* FactPool::find(FactId fact) const {
  const auto it = facts_.find(fact);
  return it == facts_.end() ? nullptr : &it->second;
}

const FactPool::Entry& FactPool::allocate(FactId fact, std::uint32_t tokens,
                                          std::int32_t encode_position) {
  free(fact);
  return facts_[fact] = take(free_facts_, tokens, encode_position, "fact");
}

bool FactPool::free(FactId fact) {
  const auto it = facts_.find(fact);
  if (it == facts_.end()) return false;
  for (auto b = it->second.blocks.rbegin(); b != it->second.blocks.rend(); ++b) {
    free_facts_.push_back(*b);
  }
  facts_.erase(it);
  return true;
}

const FactPool::Entry* FactPool::find_reserved(std::uint64_t key) const {
  const auto it = reserved_.find(key);
  return it == reserved_.end() ? nullptr : &it->second;
}

const FactPool::Entry& FactPool::allocate_reserved(std::uint64_t key, std::uint32_t tokens,
                                                   std::int32_t encode_position) {
  free_reserved(key);
  return reserved_[key] = take(free_reserved_, tokens, encode_position, "reserved");
}

bool FactPool::free_reserved(std::uint64_t key) {
  const auto it = reserved_.find(key);
  if (it == reserved_.end()) return false;
  for (auto b = it->second.blocks.rbegin(); b != it->second.blocks.rend(); ++b) {
    free_reserved_.push_back(*b);
  }
  reserved_.erase(it);
  return true;
}

PoolView FactPool::view() {
  const std::int64_t row = std::int64_t(model_.kv_heads) * model_.head_dim;
  const std::int64_t layer_stride = 2 * std::int64_t(kBlockTokens) * row;
  auto* base = static_cast<char*>(storage_.data_ptr());
  const std::int64_t elem = storage_.element_size();
  PoolView v;
  v.k = base;
  v.v = base + std::int64_t(kBlockTokens) * row * elem;
  v.layer_stride = layer_stride;
  v.block_stride = layer_stride * model_.layers;
  v.block_tokens = std::int32_t(kBlockTokens);
  return v;
}

PoolView FactPool::layer_view(std::uint32_t layer) {
  PoolView v = view();
  const std::int64_t offset = v.layer_stride * layer * storage_.element_size();
  v.k = static_cast<char*>(v.k) + offset;
  v.v = static_cast<char*>(v.v) + offset;
  return v;
}

}  // namespace inferscale
