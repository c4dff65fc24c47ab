// CLOCK: facts sit in a circle of frames with one reference bit each, set on a hit. To evict, the
// hand sweeps the circle, clearing set bits, and stops at the first fact whose bit is clear; a
// new fact takes the frame freed last (the victim's, just behind the hand).
// victim() computes where the hand would stop without moving it; on_evict() moves it. The hand
// passes pinned facts like any other (clearing their bit) but never stops on one.
// Layout for speed: the frames are an array the hand reads in order, and the reference bits a
// bitmap by fact id (1M facts: 128 KiB), so a hit touches no per-fact cache line.
#include "policies/id_list.h"
#include "policies/registry.h"

namespace inferscale {
namespace {

class Clock final : public EvictionPolicy {
 public:
  void on_insert(const CacheEntry& e, SimTime) override {
    std::uint32_t frame;
    if (!free_.empty()) {
      frame = free_.back();
      free_.pop_back();
    } else {
      frame = static_cast<std::uint32_t>(frames_.size());
      frames_.push_back(kEmpty);
    }
    frames_[frame] = static_cast<std::uint32_t>(e.id);
    grow_to(frame_of_, e.id);
    frame_of_[e.id] = frame;
    grow_to(ref_, e.id >> 6);
    set_ref(e.id, false);
    ++count_;
  }
  void on_hit(const CacheEntry& e, SimTime) override { set_ref(e.id, true); }
  void on_remove(FactId id) override { free_frame(frame_of_[id]); }

  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    const std::size_t n = frames_.size();
    if (count_ == 0) return std::nullopt;
    for (std::size_t k = 0, f = hand_; k < n; ++k, f = f + 1 == n ? 0 : f + 1) {
      const std::uint32_t id = frames_[f];
      if (id != kEmpty && !ref(id) && !ctx.pinned(id)) return id;
    }
    // Every unpinned fact has its bit set: after one turn all bits are clear, and the hand
    // stops at the first unpinned fact.
    for (std::size_t k = 0, f = hand_; k < n; ++k, f = f + 1 == n ? 0 : f + 1) {
      const std::uint32_t id = frames_[f];
      if (id != kEmpty && !ctx.pinned(id)) return id;
    }
    return std::nullopt;
  }

  void on_evict(FactId v, const EvictionContext&) override {
    // The hand walks from where it is to the victim's frame (found in the walk: its frame_of_
    // entry would be one more cache line of an unrelated fact), clearing the bits it passes.
    const std::size_t n = frames_.size();
    const auto id = static_cast<std::uint32_t>(v);
    std::size_t f = hand_;
    if (ref(v)) {  // the hand went round once: every bit cleared
      std::fill(ref_.begin(), ref_.end(), 0);
      while (frames_[f] != id) f = f + 1 == n ? 0 : f + 1;
    } else {
      for (; frames_[f] != id; f = f + 1 == n ? 0 : f + 1) {
        if (frames_[f] != kEmpty) set_ref(frames_[f], false);
      }
    }
    hand_ = f + 1 == n ? 0 : f + 1;
    free_frame(static_cast<std::uint32_t>(f));
  }

 private:
  static constexpr std::uint32_t kEmpty = 0xffffffffu;
  bool ref(FactId id) const { return (ref_[id >> 6] >> (id & 63) & 1) != 0; }
  void set_ref(FactId id, bool on) {
    const std::uint64_t bit = std::uint64_t{1} << (id & 63);
    ref_[id >> 6] = on ? ref_[id >> 6] | bit : ref_[id >> 6] & ~bit;
  }
  void free_frame(std::uint32_t frame) {
    frames_[frame] = kEmpty;
    free_.push_back(frame);
    --count_;
  }

  std::vector<std::uint32_t> frames_;    // fact id per frame, kEmpty if free
  std::vector<std::uint32_t> free_;      // free frames, the last freed on top
  std::vector<std::uint32_t> frame_of_;  // by fact id
  std::vector<std::uint64_t> ref_;       // reference bits by fact id
  std::size_t hand_ = 0;
  std::size_t count_ = 0;
};

}  // namespace

INFERSCALE_REGISTER_EVICTION(clock, "CLOCK (second chance): one reference bit per fact", {},
                             [](const PolicyArgs&) { return std::make_unique<Clock>(); });

}  // namespace inferscale
