// always: admit every fact.
#include "policies/registry.h"

namespace inferscale {
namespace {

class Always final : public AdmissionPolicy {
 public:
  bool admit(const CacheEntry&, SimTime) override { return true; }
  bool admits_everything() const override { return true; }
};

}  // namespace

INFERSCALE_REGISTER_ADMISSION(always, "admit every fact", {},
                              [](const PolicyArgs&) { return std::make_unique<Always>(); });

}  // namespace inferscale
