#pragma once
// The model and GPU shapes the cost-model and calibration tests price: Llama-3.1-8B and the
// H200's datasheet.

#include "executor/cost_model/cost_model.h"

namespace inferscale::test_shapes {

inline ModelConfig llama_8b() {
  ModelConfig m;
  m.name = "llama-3.1-8b";
  m.layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.ffn = 14336;
  m.vocab = 128256;
  return m;
}

inline GpuConfig h200() {
  GpuConfig g;
  g.name = "h200";
  g.memory_bytes = 141000000000ull;
  g.bf16_tflops = 989;
  g.hbm_gbps = 4800;
  g.pcie_gbps = 64;
  g.step_overhead_us = 500;
  g.mfu = 0.65;
  g.mbu = 0.85;
  return g;
}

}  // namespace inferscale::test_shapes
