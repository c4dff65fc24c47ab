#pragma once
// @brief The process-wide switch of programmatic dependent launch for the kernels that
// kernels/launch.cuh launches. Plain C++: the executor sets it.

namespace inferscale {

/// Whether device::launch_kernel() (kernels/launch.cuh) launches with programmatic stream
/// serialization allowed. Off until set; takes effect at the next launch.
void set_programmatic_launch(bool on);
bool programmatic_launch();

}  // namespace inferscale
