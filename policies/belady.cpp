// belady: Belady's OPT (offline). Evicts the resident fact whose next request is furthest in the
// future, and does not insert (bypasses) a fact whose next request is no sooner than that
// victim's: with uniform sizes this is optimal. Next requests come from the run's access oracle
// (RunView::next_access); a fact's next request changes only when it is requested, i.e. at its
// hit or insert, so a max-heap keyed by it stays exact.
#include <functional>
#include <stdexcept>

#include "policies/id_heap.h"
#include "policies/registry.h"

namespace inferscale {
namespace {

class Belady final : public EvictionPolicy {
 public:
  void attach(const RunView* view) override { view_ = view; }
  void on_insert(const CacheEntry& e, SimTime) override { heap_.set(e.id, next(e.id)); }
  void on_hit(const CacheEntry& e, SimTime) override { heap_.set(e.id, next(e.id)); }
  void on_remove(FactId id) override { heap_.erase(id); }

  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    const auto v = heap_.first_unpinned([&](FactId id) { return ctx.pinned(id); });
    if (v && ctx.incoming != nullptr && next(ctx.incoming->id) >= heap_.key(*v)) {
      return std::nullopt;  // the incoming fact is needed last: keep what is resident
    }
    return v;
  }

 private:
  std::int64_t next(FactId id) const {
    if (view_ == nullptr) {
      throw std::logic_error("eviction policy 'belady' needs the run's access oracle");
    }
    return view_->next_access(id);
  }

  const RunView* view_ = nullptr;
  IdHeap<std::int64_t, std::greater<std::int64_t>> heap_;  // furthest next request on top
};

}  // namespace

INFERSCALE_REGISTER_OFFLINE_EVICTION(
    belady, "Belady's OPT: furthest next request first, bypass facts needed later than all", {},
    [](const PolicyArgs&) { return std::make_unique<Belady>(); });

}  // namespace inferscale
