#pragma once
// @brief FactTable: every fact of a run by dense id (the reader's declaration order), in one to
// a dozen bytes a fact: a fact's sizes and costs are interned (a population repeats a few dozen
// token counts: a byte per fact while there are at most 256), and users and trace ids are kept
// as runs (a user's facts are declared together, with consecutive ids) while that is smaller,
// else in 4 bytes each while they fit.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "policies/policy.h"
#include "sim/memo.h"
#include "sim/prefetch.h"
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

/// The fact as a store tier's policies see it: local id `id`, `bytes` as that tier stores it,
/// never accessed before.
inline CacheEntry cache_entry(const FactInfo& f, FactId id, std::uint64_t bytes) {
  CacheEntry e;
  e.id = id;
  e.user = f.user;
  e.tokens = f.tokens;
  e.bytes = bytes;
  e.recompute_cost_ns = f.recompute_cost_ns;
  e.created = f.created;
  e.last_access = kNever;
  return e;
}

/// cache_entry for tiers whose policies read only the size (StoreTier::reads_entry_details
/// false): the fact's user and the rest stay unread (and unlooked-up).
inline CacheEntry lite_cache_entry(FactId id, std::uint32_t tokens, std::uint64_t bytes) {
  CacheEntry e;
  e.id = id;
  e.tokens = tokens;
  e.bytes = bytes;
  e.last_access = kNever;
  return e;
}

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
    std::vector<std::uint32_t>().swap(narrow_);
  }
  std::vector<std::uint32_t> narrow_;
  std::vector<std::uint64_t> wide_;
};

/// @brief Small codes, one per element, in 1, 2 or 4 bytes: the narrowest that holds them all.
class NarrowCodes {
 public:
  void push_back(std::uint32_t c) {
    if (c > limit_) widen(c);
    if (width_ == 1) {
      c1_.push_back(static_cast<std::uint8_t>(c));
    } else if (width_ == 2) {
      c2_.push_back(static_cast<std::uint16_t>(c));
    } else {
      c4_.push_back(c);
    }
    ++size_;
  }
  std::uint32_t operator[](std::size_t i) const {
    return width_ == 1 ? c1_[i] : width_ == 2 ? c2_[i] : c4_[i];
  }
  std::size_t size() const { return size_; }
  /// Starts loading the line of entry `i` (a hint).
  void prefetch(std::size_t i) const {
    if (width_ == 1) prefetch_kept(c1_.data() + i);
    if (width_ == 2) prefetch_kept(c2_.data() + i);
    if (width_ == 4) prefetch_kept(c4_.data() + i);
  }
  void reserve(std::size_t n) {
    reserved_ = n;
    if (width_ == 1) c1_.reserve(n);
    if (width_ == 2) c2_.reserve(n);
    if (width_ == 4) c4_.reserve(n);
  }
  std::size_t bytes() const { return c1_.capacity() + 2 * c2_.capacity() + 4 * c4_.capacity(); }

 private:
  void widen(std::uint32_t c) {
    if (c <= 0xffff) {
      c2_.reserve(std::max(reserved_, c1_.size()));
      c2_.assign(c1_.begin(), c1_.end());
      width_ = 2;
      limit_ = 0xffff;
    } else {
      c4_.reserve(std::max(reserved_, size_));
      if (width_ == 1) c4_.assign(c1_.begin(), c1_.end());
      if (width_ == 2) c4_.assign(c2_.begin(), c2_.end());
      width_ = 4;
      limit_ = 0xffffffffu;
    }
    std::vector<std::uint8_t>().swap(c1_);
    if (width_ == 4) std::vector<std::uint16_t>().swap(c2_);
  }
  int width_ = 1;
  std::uint32_t limit_ = 0xff;
  std::size_t size_ = 0, reserved_ = 0;
  std::vector<std::uint8_t> c1_;
  std::vector<std::uint16_t> c2_;
  std::vector<std::uint32_t> c4_;
};

class FactTable {
 public:
  /// `external`: the id in the trace; `memory_write`: appeared during serving (needs an encode)
  /// rather than memory at start.
  FactId add(const FactInfo& f, FactId external, bool memory_write) {
    const FactId id = shape_.size();
    shape_.push_back(
        intern(Shape{f.tokens, f.encode_context_tokens, f.recompute_cost_ns, memory_write}));
    add_owner(id, f.user, external);
    // Creation times are kept only once a fact is created after t = 0 (a memory write, or a
    // file's timed fact): a population declared at start costs nothing for them.
    if (f.created != 0 && created_.empty()) created_.assign(id, 0);
    if (!created_.empty()) created_.push_back(f.created);
    return id;
  }
  /// Room for `n` facts: a table that is not copied as it grows (pages never written cost no
  /// memory, so a bound well above the facts declared is cheap).
  void reserve(std::size_t n) {
    reserved_ = n;
    shape_.reserve(n);
  }
  FactInfo operator[](FactId id) const {
    const Shape& s = shapes_[shape_[id]];
    return FactInfo{user(id), created_.empty() ? 0 : created_[id], s.recompute_cost_ns, s.tokens,
                    s.encode_context_tokens};
  }
  FactTokens tokens(FactId id) const {
    const Shape& s = shapes_[shape_[id]];
    return FactTokens{s.tokens, s.encode_context_tokens};
  }
  /// Starts loading what tokens(id) reads (a hint: a loop over a request's facts issues these
  /// first, so that their misses overlap).
  void prefetch_tokens(FactId id) const { shape_.prefetch(id); }
  UserId user(FactId id) const {
    if (!flat_) return run_of(id).user;
    return user_[id];
  }
  FactId external(FactId id) const {
    if (!flat_) {
      const Run& r = run_of(id);
      return r.external + (id - r.first);
    }
    return external_[id];
  }
  bool memory_write(FactId id) const { return shapes_[shape_[id]].memory_write; }
  std::size_t size() const { return shape_.size(); }
  /// Distinct (tokens, context tokens, recompute cost, memory write) of the facts.
  std::size_t shapes() const { return shapes_.size(); }
  /// Whether users and trace ids are kept per fact (they did not come in runs).
  bool flat() const { return flat_; }
  /// Bytes held, by capacity (reserved pages not written yet included).
  std::size_t bytes() const {
    return shape_.bytes() + runs_.capacity() * sizeof(Run) + user_.bytes() + external_.bytes() +
           created_.capacity() * sizeof(SimTime) + shapes_.capacity() * sizeof(Shape) +
           shape_index_.bytes();
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
  /// Facts [first, next run's first) of `user`, with trace ids external, external + 1, ...
  struct Run {
    FactId first;
    UserId user;
    FactId external;
  };
  std::uint32_t intern(const Shape& s) {
    const ShapeKey key{(std::uint64_t(s.tokens) << 32) | s.encode_context_tokens,
                       s.recompute_cost_ns, s.memory_write};
    return shape_index_.get(key, [&] {
      shapes_.push_back(s);
      return static_cast<std::uint32_t>(shapes_.size() - 1);
    });
  }
  void add_owner(FactId id, UserId user, FactId external) {
    if (flat_) {
      user_.push_back(user);
      external_.push_back(external);
      return;
    }
    if (!runs_.empty()) {
      const Run& r = runs_.back();
      if (r.user == user && r.external + (id - r.first) == external) return;
    }
    runs_.push_back(Run{id, user, external});
    // Runs of fewer than three facts cost more than a flat table: make it flat.
    if (runs_.size() > 4096 && runs_.size() * sizeof(Run) > id * 8) make_flat(id + 1);
  }
  void make_flat(FactId n) {
    user_.reserve(std::max<std::size_t>(reserved_, n));
    external_.reserve(std::max<std::size_t>(reserved_, n));
    for (FactId id = 0; id < n; ++id) {
      user_.push_back(user(id));
      external_.push_back(external(id));
    }
    flat_ = true;
    std::vector<Run>().swap(runs_);
  }
  const Run& run_of(FactId id) const {
    // The last run starting at or before id.
    std::size_t lo = 0, n = runs_.size();
    while (n > 1) {
      const std::size_t half = n / 2;
      if (runs_[lo + half].first <= id) lo += half;
      n -= half;
    }
    return runs_[lo];
  }
  NarrowCodes shape_;  // by id: index into shapes_
  std::size_t reserved_ = 0;
  bool flat_ = false;             // users and trace ids in user_ and external_, not runs_
  std::vector<Run> runs_;         // by first fact
  NarrowIds user_;                // by id, when flat
  NarrowIds external_;            // by id, when flat
  std::vector<SimTime> created_;  // by id, empty while every fact was created at t = 0
  std::vector<Shape> shapes_;
  Memo<ShapeKey, std::uint32_t, ShapeHash> shape_index_;
};

}  // namespace inferscale
