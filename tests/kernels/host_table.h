#pragma once
// @brief A host rotary table for the kernel tests (CPU references and GPU tests alike; no CUDA).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/kernel_types.h"
#include "kernels/reference/rope.h"

namespace inferscale::test {

/// A host rotary table (llama3 scaling, theta 500000) of `positions` rows.
struct HostTable {
  std::vector<float> cos, sin;
  std::int32_t positions = 0;
  RopeTableView view() const { return {cos.data(), sin.data(), positions}; }
};

inline HostTable make_table(int head_dim, int positions) {
  RopeTableSpec spec{head_dim, positions, 500000.0, 8.0};
  HostTable t;
  t.positions = positions;
  t.cos.resize(std::size_t(positions) * head_dim / 2);
  t.sin.resize(t.cos.size());
  rope_table_build(spec, t.cos.data(), t.sin.data());
  return t;
}

}  // namespace inferscale::test
