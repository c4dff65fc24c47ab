#pragma once
// @brief The one place where libtorch versions differ for this folder: Debian's 1.13 (CPU,
// CI) and PyTorch 2.11 (CUDA, the GPU machine).
//
// - Optional arguments are c10::optional in 1.13 and std::optional in 2.x (where c10::optional
//   is an alias of it): OptionalTensor names the type that both accept.
// - The varlen flash attention op (at::_flash_attention_forward with seqused_k) exists only in
//   2.x builds with CUDA; it is called from cuda_ops.cpp alone, which CMake compiles only there.

#include <ATen/ATen.h>
#include <c10/util/Optional.h>
#include <torch/version.h>

#include <string>

namespace inferscale::compat {

using OptionalTensor = c10::optional<at::Tensor>;

/// "major.minor.patch" of the libtorch this was built against.
inline std::string torch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

}  // namespace inferscale::compat
