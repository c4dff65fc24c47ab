#pragma once
// @brief FactTable: every fact of a run by dense id (the reader's declaration order), in about
// 12 bytes a fact: a fact's sizes and costs are interned (a population repeats a few hundred
// token counts), and its user and trace id are kept in 4 bytes while they fit.

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "traces/types.h"

namespace inferscale {

/// What the hot paths read of a fact.
struct FactInfo {
  UserId user = 0;
  SimTime created = 0;
  SimTime recompute_cost_ns = 0;
  std::uint32_t tokens = 0;
  std::uint32_t encode_context_tokens = 0;  // CWE context for the run's window w
};

/// What a request's admission reads of a fact.
struct FactTokens {
  std::uint32_t tokens = 0;
  std::uint32_t encode_context_tokens = 0;
};

/// @brief A sequence of 64-bit ids kept in 4 bytes each until one does not fit (then in 8).
class NarrowIds {
 public:
  void push_back(std::uint64_t v) {
    if (wide_.empty() && v > 0xffffffffull) widen();
    if (wide_.empty()) {
      narrow_.push_back(static_cast<std::uint32_t>(v));
    } else {
      wide_.push_back(v);
    }
  }
  std::uint64_t operator[](std::size_t i) const { return wide_.empty() ? narrow_[i] : wide_[i]; }
  void reserve(std::size_t n) { narrow_.reserve(n); }
  std::size_t bytes() const {
    return narrow_.capacity() * sizeof(std::uint32_t) + wide_.capacity() * sizeof(std::uint64_t);
  }

 private:
  void widen() {
    wide_.assign(narrow_.begin(), narrow_.end());
    wide_.reserve(narrow_.capacity());
    narrow_ = {};
  }
  std::vector<std::uint32_t> narrow_;
  std::vector<std::uint64_t> wide_;
};

class FactTable {
 public:
  /// `external`: the id in the trace; `memory_write`: appeared during serving (needs an encode)
  /// rather than memory at start.
  FactId add(const FactInfo& f, FactId external, bool memory_write) {
    const FactId id = shape_.size();
    shape_.push_back(
        intern(Shape{f.tokens, f.encode_context_tokens, f.recompute_cost_ns, memory_write}));
    user_.push_back(f.user);
    external_.push_back(external);
    // Creation times are kept only once a fact is created after t = 0 (a memory write, or a
    // file's timed fact): a population declared at start costs nothing for them.
    if (f.created != 0 && created_.empty()) created_.assign(id, 0);
    if (!created_.empty()) created_.push_back(f.created);
    return id;
  }
  /// Room for `n` facts: a table that is not copied as it grows (pages never written cost no
  /// memory, so a bound well above the facts declared is cheap).
  void reserve(std::size_t n) {
    shape_.reserve(n);
    user_.reserve(n);
    external_.reserve(n);
  }
  FactInfo operator[](FactId id) const {
    const Shape& s = shapes_[shape_[id]];
    return FactInfo{user_[id], created_.empty() ? 0 : created_[id], s.recompute_cost_ns, s.tokens,
                    s.encode_context_tokens};
  }
  FactTokens tokens(FactId id) const {
    const Shape& s = shapes_[shape_[id]];
    return FactTokens{s.tokens, s.encode_context_tokens};
  }
  FactId external(FactId id) const { return external_[id]; }
  bool memory_write(FactId id) const { return shapes_[shape_[id]].memory_write; }
  std::size_t size() const { return shape_.size(); }
  /// Distinct (tokens, context tokens, recompute cost, memory write) of the facts.
  std::size_t shapes() const { return shapes_.size(); }
  /// Bytes held, by capacity (reserved pages not written yet included).
  std::size_t bytes() const {
    return shape_.capacity() * sizeof(std::uint32_t) + user_.bytes() + external_.bytes() +
           created_.capacity() * sizeof(SimTime) + shapes_.capacity() * sizeof(Shape) +
           shape_index_.size() * (sizeof(ShapeKey) + sizeof(std::uint32_t) + 2 * sizeof(void*));
  }

 private:
  struct Shape {
    std::uint32_t tokens;
    std::uint32_t encode_context_tokens;
    SimTime recompute_cost_ns;
    bool memory_write;
  };
  struct ShapeKey {
    std::uint64_t tokens_context;
    SimTime cost;
    bool memory_write;
    bool operator==(const ShapeKey&) const = default;
  };
  struct ShapeHash {
    std::size_t operator()(const ShapeKey& k) const {
      std::uint64_t h = k.tokens_context * 0x9E3779B97F4A7C15ull;
      h ^= static_cast<std::uint64_t>(k.cost) + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
      return static_cast<std::size_t>(h ^ (k.memory_write ? 0x94D049BB133111EBull : 0));
    }
  };
  std::uint32_t intern(const Shape& s) {
    const ShapeKey key{(std::uint64_t(s.tokens) << 32) | s.encode_context_tokens,
                       s.recompute_cost_ns, s.memory_write};
    if (last_ < shapes_.size() && last_key_ == key) return last_;
    auto [it, inserted] = shape_index_.try_emplace(key, static_cast<std::uint32_t>(shapes_.size()));
    if (inserted) shapes_.push_back(s);
    last_key_ = key;
    last_ = it->second;
    return last_;
  }
  std::vector<std::uint32_t> shape_;  // by id: index into shapes_
  NarrowIds user_;                    // by id
  NarrowIds external_;                // by id
  std::vector<SimTime> created_;      // by id, empty while every fact was created at t = 0
  std::vector<Shape> shapes_;
  std::unordered_map<ShapeKey, std::uint32_t, ShapeHash> shape_index_;
  ShapeKey last_key_{};
  std::uint32_t last_ = 0xffffffffu;
};

}  // namespace inferscale
