// probabilistic: admit with probability p, or p * exp(-bytes / size_scale_bytes) when a scale is
// given (AdaptSize-style: large facts are admitted rarely). Seeded from the run's seed.
#include <cmath>

#include "policies/registry.h"

namespace inferscale {
namespace {

class Probabilistic final : public AdmissionPolicy {
 public:
  Probabilistic(double p, double scale_bytes, std::uint64_t seed)
      : p_(p), scale_bytes_(scale_bytes), state_(seed) {}
  bool admit(const CacheEntry& e, SimTime) override {
    double p = p_;
    if (scale_bytes_ > 0) p *= std::exp(-double(e.bytes) / scale_bytes_);
    return uniform() < p;
  }

 private:
  double uniform() {  // splitmix64, 53 bits
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return double((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
  }

  double p_, scale_bytes_;
  std::uint64_t state_;
};

}  // namespace

INFERSCALE_REGISTER_ADMISSION(probabilistic,
                              "admit with probability p, optionally decaying with size",
                              {ParamInfo{"probability", "0.5", "admission probability"},
                               ParamInfo{"size_scale_bytes", "0",
                                         "if > 0: p * exp(-bytes / size_scale_bytes)"}},
                              [](const PolicyArgs& a) {
                                return std::make_unique<Probabilistic>(
                                    a.params.number("probability", 0.5, 0, 1),
                                    a.params.number("size_scale_bytes", 0, 0, 1e18), a.seed);
                              });

}  // namespace inferscale
