// Tensor parallelism and mixture-of-experts in the roofline cost model: a TP replica's step is the
// hand-computed roofline of one GPU's share of the model plus the ring all-reduces, KV heads split
// or replicated as vLLM does, and a MoE step reads the experts its tokens touch.
#include <cmath>

#include "executor/cost_model/cost_model.h"
#include "tests/catch.h"

using namespace inferscale;

namespace {

ModelConfig llama_70b() {
  ModelConfig m;
  m.name = "llama-3.1-70b";
  m.layers = 80;
  m.hidden = 8192;
  m.heads = 64;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.ffn = 28672;
  m.vocab = 128256;
  return m;
}

ModelConfig qwen3_30b_a3b() {
  ModelConfig m;
  m.name = "qwen3-30b-a3b";
  m.layers = 48;
  m.hidden = 2048;
  m.heads = 32;
  m.kv_heads = 4;
  m.head_dim = 128;
  m.ffn = 6144;
  m.vocab = 151936;
  m.experts = 128;
  m.experts_active = 8;
  m.expert_ffn = 768;
  return m;
}

GpuConfig h200() {
  GpuConfig g;
  g.name = "h200";
  g.memory_bytes = 141'000'000'000ull;
  g.bf16_tflops = 989;
  g.hbm_gbps = 4800;
  g.pcie_gbps = 64;
  g.step_overhead_us = 500;
  g.per_seq_overhead_us = 5;
  g.mfu = 0.65;
  g.mbu = 0.85;
  g.pcie_gen = 5;
  g.nvlink_gen = 4;
  g.nvlink_gbps = 450;
  g.link_latency_us = 1;
  g.link_efficiency = 0.8;
  return g;
}

CostModel cost_at(const ModelConfig& m, std::uint32_t tp, const GpuConfig& g = h200()) {
  return CostModel(m, CostRates::from_gpu(g), TensorParallel::from_gpu(g, tp));
}

BatchPlan decodes(std::uint32_t n, std::uint32_t context) {
  BatchPlan plan;
  for (std::uint32_t i = 0; i < n; ++i) plan.decodes.push_back(DecodeItem{i, context});
  return plan;
}

BatchPlan prefill(std::uint32_t tokens) {
  BatchPlan plan;
  PrefillItem p;
  p.computed_now = tokens;
  p.first_chunk = true;
  p.last_chunk = true;
  plan.prefills.push_back(p);
  return plan;
}

}  // namespace

TEST_CASE("tensor parallel: a TP-2 step is the roofline of half the model plus the all-reduces") {
  const ModelConfig m = llama_70b();
  const GpuConfig g = h200();
  const std::uint32_t batch = 16, context = 2000;
  // One GPU's share at tp 2, written out from the shapes: 32 query heads, 4 KV heads, half the
  // MLP width and half the vocabulary; norms whole.
  const double h = 8192, q = 32 * 128, kv = 4 * 128, ffn = 28672 / 2, vocab = 128256 / 2;
  const double per_layer = h * q + 2 * h * kv + q * h + 3 * h * ffn + 2 * h;
  const double weight_bytes = 2 * (80 * per_layer + 2 * vocab * h + h);
  const double kv_bytes_per_token = 2.0 * 80 * 4 * 128 * 2;
  CHECK(double(m.weight_bytes(2)) == weight_bytes);
  CHECK(double(m.kv_bytes_per_token(2)) == kv_bytes_per_token);
  // Half of everything but the norms, which every GPU holds whole.
  CHECK(std::fabs(double(m.weight_bytes(2)) / double(m.weight_bytes(1)) - 0.5) < 1e-4);

  const double gemm_flops =
      batch * 2.0 * 80 * (h * q + 2 * h * kv + q * h + 3 * h * ffn) + batch * 2.0 * vocab * h;
  const double attention_flops = batch * 4.0 * 80 * 32 * 128 * (context + 1);
  const double hbm_bytes = weight_bytes + batch * (context + 1.0) * kv_bytes_per_token;
  const double gemm_ns = gemm_flops / (989e12 * 0.65) * 1e9;
  const double attention_ns = attention_flops / (989e12 * 0.65 * 0.7) * 1e9;
  const double hbm_ns = hbm_bytes / (4800e9 * 0.85) * 1e9;
  // Ring all-reduce of the batch's hidden states, twice per layer: 2(p-1)/p * bytes / bw +
  // 2(p-1) * latency, p = 2.
  const double message_bytes = batch * h * 2;
  const double allreduce_ns = 2.0 * 1 / 2 * message_bytes / (450e9 * 0.8) * 1e9 + 2.0 * 1 * 1e3;
  const double expected_ns =
      std::max(gemm_ns + attention_ns, hbm_ns) + 160 * allreduce_ns + 500e3 + batch * 5e3;

  const CostModel cost = cost_at(m, 2);
  const StepWork w = cost.work(decodes(batch, context));
  CHECK(w.allreduces == 160);
  CHECK(w.allreduce_bytes == message_bytes);
  const SimTime got = cost.price(w).duration_ns;
  CHECK(std::fabs(double(got) - expected_ns) <= 1.0);
  // The fused decode pricing (contexts summed over the batch) agrees, all-reduces included.
  SimTime fused[1];
  REQUIRE(cost.decode_durations(batch, std::uint64_t(batch) * context, fused));
  CHECK(fused[0] == got);
}

TEST_CASE("tensor parallel: the all-reduce term is the ring formula and vanishes at tp 1") {
  const ModelConfig m = llama_70b();
  GpuConfig free_link = h200();
  free_link.nvlink_gbps = 1e12;  // near-infinite bandwidth, no latency: only compute and HBM
  free_link.link_latency_us = 0;
  for (std::uint32_t tp : {2u, 4u, 8u}) {
    INFO("tp " << tp);
    const BatchPlan plan = prefill(1024);
    const CostModel with = cost_at(m, tp), without = cost_at(m, tp, free_link);
    const TensorParallel link = TensorParallel::from_gpu(h200(), tp);
    const double p = tp, bytes = 1024.0 * 8192 * 2;
    const double one = 2 * (p - 1) / p * bytes / (450e9 * 0.8) * 1e9 + 2 * (p - 1) * 1e3;
    CHECK(std::fabs(link.allreduce_ns(bytes) - one) < 1e-6 * one);
    const double diff = double(with.price(with.work(plan)).duration_ns -
                               without.price(without.work(plan)).duration_ns);
    const double free_ns = TensorParallel::from_gpu(free_link, tp).allreduce_ns(bytes);
    CHECK(std::fabs(diff - 160 * (one - free_ns)) <= 2.0);
  }
  const StepWork w1 = cost_at(m, 1).work(prefill(1024));
  CHECK(w1.allreduces == 0);
  CHECK(TensorParallel::from_gpu(h200(), 1).allreduce_ns(1e9) == 0);
}

TEST_CASE("tensor parallel: without NVLink the all-reduce runs over PCIe") {
  GpuConfig pcie_only = h200();
  pcie_only.nvlink_gen = 0;
  pcie_only.nvlink_gbps = 0;
  const TensorParallel link = TensorParallel::from_gpu(pcie_only, 4);
  CHECK(link.link_bytes_per_s == 64e9 * 0.8);
  CHECK(TensorParallel::from_gpu(h200(), 4).link_bytes_per_s == 450e9 * 0.8);
}

TEST_CASE("tensor parallel: step time falls as the replica's GPUs grow") {
  const ModelConfig m = llama_70b();
  for (const auto& [name, plan] : {std::pair{"decode of 32 at 4k context", decodes(32, 4096)},
                                   std::pair{"prefill of 4k tokens", prefill(4096)}}) {
    INFO(name);
    SimTime previous = 0;
    for (std::uint32_t tp : {1u, 2u, 4u, 8u}) {
      const CostModel cost = cost_at(m, tp);
      const SimTime t = cost.price(cost.work(plan)).duration_ns;
      if (tp > 1) CHECK(t < previous);
      previous = t;
    }
  }
}

TEST_CASE("tensor parallel: KV heads split, or replicated when fewer than the GPUs") {
  const ModelConfig m = llama_70b();  // 8 KV heads
  CHECK(m.kv_heads_per_gpu(1) == 8);
  CHECK(m.kv_heads_per_gpu(2) == 4);
  CHECK(m.kv_heads_per_gpu(8) == 1);
  CHECK(m.kv_bytes_per_token(2) * 2 == m.kv_bytes_per_token(1));
  CHECK(m.kv_bytes_per_token(8) * 8 == m.kv_bytes_per_token(1));
  const ModelConfig moe = qwen3_30b_a3b();  // 4 KV heads
  CHECK(moe.kv_heads_per_gpu(4) == 1);
  CHECK(moe.kv_heads_per_gpu(8) == 1);  // each head on two GPUs
  CHECK(moe.kv_bytes_per_token(8) == moe.kv_bytes_per_token(4));
  CHECK(moe.kv_bytes_per_token(8) == 2ull * 48 * 1 * 128 * 2);
  // The replicated K/V projections are whole on every GPU: the weights do not halve there.
  CHECK(moe.parameters(4) - moe.parameters(8) ==
        48 * ((2048ull * 4096 / 4 - 2048ull * 4096 / 8) * 2 +
              128ull * 3 * 2048 * (768 / 4 - 768 / 8)) +
            2 * 2048ull * (151936 / 4 - 151936 / 8));
  // The cost model's KV traffic per decode follows the per-GPU heads.
  const StepWork w4 = cost_at(moe, 4).work(decodes(1, 999));
  const StepWork w8 = cost_at(moe, 8).work(decodes(1, 999));
  const double kv_traffic = 1000.0 * double(moe.kv_bytes_per_token(8));
  CHECK(w4.hbm_bytes - moe.weight_read_bytes(1, 4) == kv_traffic);
  CHECK(w8.hbm_bytes - moe.weight_read_bytes(1, 8) == kv_traffic);
}

TEST_CASE("mixture of experts: active parameters and experts touched per step") {
  const ModelConfig m = qwen3_30b_a3b();
  // Published: 30.5 B parameters in all, 3.3 B active.
  CHECK(std::fabs(double(m.parameters()) / 1e9 - 30.5) < 0.1);
  CHECK(std::fabs(double(m.active_parameters()) / 1e9 - 3.3) < 0.1);
  // E * (1 - (1 - a/E)^T) under uniform routing: one token touches its 8 experts, many tokens
  // touch nearly all 128.
  CHECK(std::fabs(m.experts_touched(1) - 8) < 1e-9);
  CHECK(std::fabs(m.experts_touched(2) - 128 * (1 - std::pow(120.0 / 128, 2))) < 1e-9);
  CHECK(m.experts_touched(4096) > 127.99);
  const double shared = double(m.weight_bytes() - m.expert_weight_bytes());
  const double experts = double(m.expert_weight_bytes());
  CHECK(m.weight_read_bytes(1) == shared + experts * 8 / 128);
  CHECK(m.weight_read_bytes(0) == 0);
  // A dense model reads all of its weights at any batch.
  CHECK(llama_70b().weight_read_bytes(1) == double(llama_70b().weight_bytes()));
  // Weight reads per decode step grow with the batch, sublinearly, towards the whole model.
  const CostModel cost = cost_at(m, 1);
  double previous = 0;
  for (std::uint32_t batch : {1u, 2u, 8u, 64u, 512u}) {
    INFO("batch " << batch);
    const StepWork w = cost.work(decodes(batch, 0));
    const double weights = w.hbm_bytes - batch * double(m.kv_bytes_per_token());
    CHECK(std::fabs(weights - m.weight_read_bytes(batch)) <= 1e-6 * weights);
    CHECK(weights > previous);
    CHECK(weights <= double(m.weight_bytes()));
    previous = weights;
    // The fused decode pricing reads the same experts.
    SimTime fused[1];
    REQUIRE(cost.decode_durations(batch, 0, fused));
    CHECK(fused[0] == cost.price(w).duration_ns);
  }
  // FLOPs count the active experts: a token's matmuls are those of the active parameters.
  const double attention_and_mlp = m.layer_flops_per_token();
  const double embeddings = 2.0 * m.vocab * m.hidden + m.hidden;
  const double per_layer_norms = 2.0 * m.hidden * m.layers;
  CHECK(std::fabs(attention_and_mlp / 2 -
                  (double(m.active_parameters()) - embeddings - per_layer_norms)) < 1.0);
}
