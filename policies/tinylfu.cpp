// tinylfu: admit a fact once it has been looked up at least `threshold` times in the recent
// sample (TinyLFU's count-min sketch with a doorkeeper; the current lookup counts). One-hit
// wonders never displace resident facts.
#include "policies/frequency_sketch.h"
#include "policies/registry.h"

namespace inferscale {
namespace {

class TinyLfu final : public AdmissionPolicy {
 public:
  TinyLfu(std::size_t width, std::uint64_t sample_size, std::uint32_t threshold)
      : sketch_(width, sample_size), threshold_(threshold) {}
  void on_access(const CacheEntry& e, SimTime) override { sketch_.add(e.id); }
  bool admit(const CacheEntry& e, SimTime) override { return sketch_.estimate(e.id) >= threshold_; }

 private:
  FrequencySketch sketch_;
  std::uint32_t threshold_;
};

}  // namespace

INFERSCALE_REGISTER_ADMISSION(
    tinylfu, "admit facts looked up at least `threshold` times recently (TinyLFU sketch)",
    {ParamInfo{"threshold", "2", "lookups in the sample, the current one included"},
     ParamInfo{"width", "65536", "counters per sketch row (about the number of hot facts)"},
     ParamInfo{"sample_size", "10 * width", "lookups between two halvings of every count"}},
    [](const PolicyArgs& a) {
      const auto width = a.params.integer("width", 65536, 64, 1 << 28);
      return std::make_unique<TinyLfu>(
          static_cast<std::size_t>(width),
          static_cast<std::uint64_t>(a.params.integer("sample_size", 10 * width, 1, 1ll << 40)),
          static_cast<std::uint32_t>(a.params.integer("threshold", 2, 1, 16)));
    });

}  // namespace inferscale
