#pragma once
// @brief The one place where libtorch versions differ for this folder: Debian's 1.13 (CPU,
// CI) and PyTorch 2.11 (CUDA, the GPU machine).
//
// - Optional arguments are c10::optional in 1.13 and std::optional in 2.x (where c10::optional
//   is an alias of it): OptionalTensor names the type that both accept.
// - The varlen flash attention op (at::_flash_attention_forward with seqused_k), the preferred
//   BLAS library setter and CUDA graph capture modes exist only in 2.x builds with CUDA; they
//   are called from cuda_ops.cpp alone, which CMake compiles only there.
// - The warning handler's interface (install_warning_handler()).

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <c10/util/Optional.h>
#include <torch/version.h>

#include <cstdio>
#include <string>

namespace inferscale::compat {

using OptionalTensor = c10::optional<at::Tensor>;

/// "major.minor.patch" of the libtorch this was built against.
inline std::string torch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

/// Prints libtorch's warnings (TORCH_WARN) on this thread with stdio. The default handler
/// writes through c10's logger to std::cerr, which crashed the CLI built against PyTorch 2.11
/// on the GPU machine (a fatal signal in std::__ostream_insert, from the warning that
/// Context::setBlasPreferredBackend gives).
inline void install_warning_handler() {
#if TORCH_VERSION_MAJOR >= 2
  struct Handler : c10::WarningHandler {
    void process(const c10::Warning& w) override {
      std::fprintf(stderr, "warning (libtorch): %s\n", w.msg().c_str());
    }
  };
  static Handler handler;
  c10::WarningUtils::set_warning_handler(&handler);
#else
  struct Handler : c10::WarningHandler {
    void process(const c10::SourceLocation& where, const std::string& msg, bool) override {
      (void)where;
      std::fprintf(stderr, "warning (libtorch): %s\n", msg.c_str());
    }
  };
  static Handler handler;
  c10::Warning::set_warning_handler(&handler);
#endif
}

}  // namespace inferscale::compat
