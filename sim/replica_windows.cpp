#include "sim/replica_windows.h"

#include <algorithm>
#include <span>

#include "sim/partition.h"

namespace inferscale {

void WindowRows::add(SimTime time, int rep, std::uint64_t kick, const std::vector<SimTime>& starts,
                     std::size_t begin, std::size_t end) {
  std::int32_t& ref = replica_ref_[std::size_t(rep)];
  if (ref < 0) {
    ref = static_cast<std::int32_t>(chains_.size());
    chains_.push_back(&starts);
  }
  groups_.push_back(Group{time, kick, static_cast<std::uint32_t>(ref), starts.size(), begin, end});
}

void WindowRows::keep_chain(int rep, std::vector<SimTime>& starts) {
  std::int32_t& ref = replica_ref_[std::size_t(rep)];
  if (ref < 0) return;
  kept_.push_back(std::move(starts));
  chains_[std::size_t(ref)] = &kept_.back();
  starts = {};
  ref = -1;
}

std::vector<std::pair<std::size_t, std::size_t>> WindowRows::take_order() {
  std::vector<std::uint32_t> order(groups_.size());
  for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto chain = [this](const Group& g) {
    return std::span<const SimTime>(chains_[g.chain]->data(), g.length);
  };
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    const Group& x = groups_[a];
    const Group& y = groups_[b];
    if (x.time != y.time) return x.time < y.time;
    return compare_order(x.time, chain(x), x.kick, y.time, chain(y), y.kick) < 0;
  });
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  ranges.reserve(order.size());
  for (const std::uint32_t i : order) ranges.emplace_back(groups_[i].begin, groups_[i].end);
  groups_.clear();
  chains_.clear();
  kept_.clear();
  std::fill(replica_ref_.begin(), replica_ref_.end(), -1);
  return ranges;
}

}  // namespace inferscale
