#pragma once
// @brief INFERSCALE_CUDA_CHECK: turns a failed CUDA call into an exception naming file and line.
// Plain C++ (CUDA runtime API only), for launchers' callers, tests and the executor.

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

#define INFERSCALE_CUDA_CHECK(expr)                                                         \
  do {                                                                                      \
    const cudaError_t inferscale_cuda_err_ = (expr);                                        \
    if (inferscale_cuda_err_ != cudaSuccess) {                                              \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) +     \
                               ": " #expr ": " + cudaGetErrorString(inferscale_cuda_err_)); \
    }                                                                                       \
  } while (0)
