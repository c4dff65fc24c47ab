#pragma once
// @brief CPU reference of rotary position embedding: the rotary table (with llama3 frequency
// scaling) and the rotation that kernels/rope.cu, inject.cu and kv_append.cu all apply.

#include <cstdint>
#include <vector>

#include "kernels/params.h"

namespace inferscale {

/// What a rotary table is built from (a model's rope settings).
struct RopeTableSpec {
  std::int32_t head_dim = 0;
  std::int32_t positions = 0;  // rows of the table
  double theta = 10000.0;
  double scaling_factor = 0.0;  // llama3 scaling; 0 or 1: none
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  std::int32_t original_max_positions = 8192;
};

/// Inverse frequencies theta^(-2i/d), i < d/2, with llama3 scaling when the spec asks for it.
std::vector<double> rope_inv_freq(const RopeTableSpec& spec);

/// Fills cos/sin [positions, head_dim / 2] with cos/sin(p * inv_freq[i]), computed in double
/// and rounded once to fp32. The one table every rotation (native or injected) reads.
void rope_table_build(const RopeTableSpec& spec, float* cos, float* sin);

/// Rotates one head vector of `head_dim` elements: reads in[in_off ..], writes out[out_off ..]
/// (may alias). Forward rotates by the angle of position p; !Forward rotates back. p < 0 means
/// the angle of -|p|. Per pair (a, b) with c = cos, s = sin:
///   forward: a' = a*c - b*s, b' = b*c + a*s;  inverse: a' = a*c + b*s, b' = b*c - a*s,
/// each product and sum rounded to fp32 (no fused multiply-add), the result rounded to dtype.
template <bool Forward>
void rope_row_reference(const void* in, std::int64_t in_off, void* out, std::int64_t out_off,
                        std::int32_t head_dim, RopeStyle style, const RopeTableView& table,
                        std::int32_t position, DType dtype);

/// The reference of rope_rotate_launch<Forward>.
template <bool Forward>
void rope_rotate_reference(const RopeParams& p);

}  // namespace inferscale
