#pragma once
// @brief Memo: a map of a few distinct keys, read far more often than written, with a
// direct-mapped cache of recent keys in front (a hit costs a multiply and a compare, no
// division by the bucket count).

#include <array>
#include <cstddef>
#include <cstdint>
#include <unordered_map>

namespace inferscale {

template <class Key, class Value, class Hash = std::hash<Key>>
class Memo {
 public:
  /// The value of `key`; make() computes it the first time it is asked.
  template <class Make>
  Value get(const Key& key, Make&& make) {
    const auto h = static_cast<std::uint64_t>(Hash{}(key));
    Slot& s = slots_[(h * 0x9E3779B97F4A7C15ull) >> (64 - kSlotBits)];
    if (s.filled && s.key == key) return s.value;
    auto [it, inserted] = map_.try_emplace(key);
    if (inserted) it->second = make();
    s = Slot{key, it->second, true};
    return s.value;
  }
  /// Distinct keys asked so far.
  std::size_t size() const { return map_.size(); }
  /// Bytes held, roughly (the map's nodes and the cache).
  std::size_t bytes() const {
    return map_.size() * (sizeof(Key) + sizeof(Value) + 2 * sizeof(void*)) + sizeof(slots_);
  }

 private:
  static constexpr int kSlotBits = 9;
  struct Slot {
    Key key{};
    Value value{};
    bool filled = false;
  };
  std::array<Slot, std::size_t{1} << kSlotBits> slots_{};
  std::unordered_map<Key, Value, Hash> map_;
};

}  // namespace inferscale
