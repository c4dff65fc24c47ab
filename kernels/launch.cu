#include <atomic>

#include "kernels/launch.h"

namespace inferscale {
namespace {
std::atomic<bool> programmatic_launch_on{false};
}  // namespace

void set_programmatic_launch(bool on) {
  programmatic_launch_on.store(on, std::memory_order_relaxed);
}

bool programmatic_launch() {
  return programmatic_launch_on.load(std::memory_order_relaxed);
}

}  // namespace inferscale
