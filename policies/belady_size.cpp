// belady_size: size-aware Belady (offline). Evicts the resident fact with the largest
// bytes * (requests until its next request), and bypasses an incoming fact whose own score is no
// smaller. With variable sizes no simple rule is optimal; this is the usual heuristic.
// The score changes with the position, but only through the size: facts are kept in one
// max-heap of next requests per distinct size, and the victim is the best of the heaps' tops
// (O(distinct sizes) per victim; fact sizes take few distinct values).
#include <functional>
#include <stdexcept>
#include <unordered_map>

#include "policies/id_heap.h"
#include "policies/id_list.h"
#include "policies/registry.h"

namespace inferscale {
namespace {

class BeladySize final : public EvictionPolicy {
 public:
  void attach(const RunView* view) override { view_ = view; }
  void on_insert(const CacheEntry& e, SimTime) override {
    auto [it, added] =
        class_of_bytes_.try_emplace(e.bytes, static_cast<std::uint32_t>(heaps_.size()));
    if (added) {
      heaps_.emplace_back(&pos_);
      class_bytes_.push_back(e.bytes);
    }
    grow_to(class_of_, e.id);
    class_of_[e.id] = it->second;
    heaps_[it->second].set(e.id, next(e.id));
  }
  void on_hit(const CacheEntry& e, SimTime) override {
    heaps_[class_of_[e.id]].set(e.id, next(e.id));
  }
  void on_remove(FactId id) override { heaps_[class_of_[id]].erase(id); }

  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    std::optional<FactId> best;
    double best_score = -1;
    const std::int64_t now = position();
    for (std::size_t c = 0; c < heaps_.size(); ++c) {
      const auto v = heaps_[c].first_unpinned([&](FactId id) { return ctx.pinned(id); });
      if (!v) continue;
      const double s = score(heaps_[c].key(*v), class_bytes_[c], now);
      if (s > best_score) best = v, best_score = s;
    }
    if (best && ctx.incoming != nullptr &&
        score(next(ctx.incoming->id), ctx.incoming->bytes, now) >= best_score) {
      return std::nullopt;  // the incoming fact is the worst to keep
    }
    return best;
  }

 private:
  static double score(std::int64_t next, std::uint64_t bytes, std::int64_t now) {
    const double distance = next == kNever ? 1e18 : double(next - now);
    return distance * double(bytes);
  }
  const RunView& view() const {
    if (view_ == nullptr) {
      throw std::logic_error("eviction policy 'belady_size' needs the run's access oracle");
    }
    return *view_;
  }
  std::int64_t next(FactId id) const { return view().next_access(id); }
  std::int64_t position() const { return view().position(); }

  using Heap = IdHeap<std::int64_t, std::greater<std::int64_t>>;
  const RunView* view_ = nullptr;
  std::vector<std::uint32_t> pos_;  // heap positions, shared by all size classes
  std::vector<Heap> heaps_;         // one per distinct size
  std::vector<std::uint64_t> class_bytes_;
  std::unordered_map<std::uint64_t, std::uint32_t> class_of_bytes_;
  std::vector<std::uint32_t> class_of_;
};

}  // namespace

INFERSCALE_REGISTER_OFFLINE_EVICTION(
    belady_size, "size-aware Belady: largest bytes x distance to next request first", {},
    [](const PolicyArgs&) { return std::make_unique<BeladySize>(); });

}  // namespace inferscale
