#pragma once
// @brief CPU reference of the staged copy (kernels/staged_copy.cu).

#include <cstddef>

namespace inferscale {

/// dst[i] = src[i] for `words` 4-byte words.
void staged_copy_reference(void* dst, const void* src, std::size_t words);

}  // namespace inferscale
