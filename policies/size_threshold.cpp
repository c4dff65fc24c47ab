// size_threshold: admit only facts no larger than a limit (large facts would displace many).
#include <algorithm>

#include "policies/registry.h"

namespace inferscale {
namespace {

class SizeThreshold final : public AdmissionPolicy {
 public:
  explicit SizeThreshold(std::uint64_t max_bytes) : max_bytes_(max_bytes) {}
  bool admit(const CacheEntry& e, SimTime) override { return e.bytes <= max_bytes_; }

 private:
  std::uint64_t max_bytes_;
};

}  // namespace

INFERSCALE_REGISTER_ADMISSION(
    size_threshold, "admit facts up to a size: the smaller of max_bytes and max_fraction",
    {ParamInfo{"max_bytes", "0", "largest admitted fact in bytes (0: no absolute limit)"},
     ParamInfo{"max_fraction", "0.01", "largest admitted fact as a share of the capacity"}},
    [](const PolicyArgs& a) {
      const auto max_bytes = a.params.integer("max_bytes", 0, 0, 1ll << 50);
      const double fraction = a.params.number("max_fraction", 0.01, 0, 1);
      std::uint64_t limit = static_cast<std::uint64_t>(fraction * double(a.capacity_bytes));
      if (max_bytes > 0) limit = std::min<std::uint64_t>(limit, std::uint64_t(max_bytes));
      return std::make_unique<SizeThreshold>(limit);
    });

}  // namespace inferscale
