// The handshake's comparison: what must match between an experiment and an executor server.
#include <cstdio>
#include <string>

#include "executor/remote/protocol.h"

namespace inferscale::remote {

namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

std::string gib(std::uint64_t bytes) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%llu bytes (%.2f GiB)", static_cast<unsigned long long>(bytes),
                double(bytes) / double(1ull << 30));
  return buf;
}

std::string describe(const ModelConfig& m) {
  return m.name + " (" + std::to_string(m.layers) + " layers, hidden " + std::to_string(m.hidden) +
         ", " + std::to_string(m.heads) + " heads, " + std::to_string(m.kv_heads) +
         " kv heads, head_dim " + std::to_string(m.head_dim) + ", ffn " + std::to_string(m.ffn) +
         ", vocab " + std::to_string(m.vocab) + ")";
}

/// Names of the fields that differ, "field a vs b" each.
class Diff {
 public:
  template <class T>
  void field(const char* name, const T& a, const T& b) {
    if (a == b) return;
    if (!text_.empty()) text_ += ", ";
    text_ += name;
    text_ += ' ';
    text_ += show(a) + " vs " + show(b);
  }
  const std::string& text() const { return text_; }

 private:
  static std::string show(const std::string& s) { return "'" + s + "'"; }
  static std::string show(bool b) { return b ? "true" : "false"; }
  static std::string show(double d) { return number(d); }
  static std::string show(RopeLayout l) { return l == RopeLayout::kGptj ? "gptj" : "neox"; }
  static std::string show(std::uint32_t v) { return std::to_string(v); }
  static std::string show(std::uint64_t v) { return std::to_string(v); }
  std::string text_;
};

}  // namespace

std::string identity_mismatch(const ExecutorIdentity& server, const ExecutorIdentity& client) {
  const ModelConfig &a = server.model, &b = client.model;
  Diff shape;
  shape.field("name", a.name, b.name);
  shape.field("layers", a.layers, b.layers);
  shape.field("hidden", a.hidden, b.hidden);
  shape.field("heads", a.heads, b.heads);
  shape.field("kv_heads", a.kv_heads, b.kv_heads);
  shape.field("head_dim", a.head_dim, b.head_dim);
  shape.field("ffn", a.ffn, b.ffn);
  shape.field("vocab", a.vocab, b.vocab);
  shape.field("tie_embeddings", a.tie_embeddings, b.tie_embeddings);
  shape.field("rope_theta", a.rope_theta, b.rope_theta);
  shape.field("rope_layout", a.rope_layout, b.rope_layout);
  shape.field("rope_scaling_factor", a.rope_scaling_factor, b.rope_scaling_factor);
  shape.field("rope_low_freq_factor", a.rope_low_freq_factor, b.rope_low_freq_factor);
  shape.field("rope_high_freq_factor", a.rope_high_freq_factor, b.rope_high_freq_factor);
  shape.field("rope_original_max_positions", a.rope_original_max_positions,
              b.rope_original_max_positions);
  shape.field("rms_eps", a.rms_eps, b.rms_eps);
  shape.field("max_positions", a.max_positions, b.max_positions);
  if (!shape.text().empty()) {
    return "model mismatch: server " + describe(a) + ", client " + describe(b) + " (differs in " +
           shape.text() + ")";
  }
  if (a.dtype_bytes != b.dtype_bytes) {
    return "dtype mismatch: server " + a.name + " with " + std::to_string(a.dtype_bytes) +
           "-byte values, client " + std::to_string(b.dtype_bytes) + "-byte values";
  }
  const GpuConfig &g = server.gpu, &h = client.gpu;
  Diff gpu;
  gpu.field("name", g.name, h.name);
  gpu.field("memory_bytes", g.memory_bytes, h.memory_bytes);
  gpu.field("bf16_tflops", g.bf16_tflops, h.bf16_tflops);
  gpu.field("hbm_gbps", g.hbm_gbps, h.hbm_gbps);
  gpu.field("pcie_gbps", g.pcie_gbps, h.pcie_gbps);
  gpu.field("step_overhead_us", g.step_overhead_us, h.step_overhead_us);
  gpu.field("per_seq_overhead_us", g.per_seq_overhead_us, h.per_seq_overhead_us);
  gpu.field("mfu", g.mfu, h.mfu);
  gpu.field("mbu", g.mbu, h.mbu);
  gpu.field("pcie_efficiency", g.pcie_efficiency, h.pcie_efficiency);
  if (!gpu.text().empty()) {
    return "gpu mismatch: server " + g.name + ", client " + h.name + " (differs in " + gpu.text() +
           ")";
  }
  if (server.pool_capacity_bytes != client.pool_capacity_bytes) {
    return "pool capacity mismatch: server " + gib(server.pool_capacity_bytes) + ", client " +
           gib(client.pool_capacity_bytes) +
           " (start the server with --pool-capacity equal to the experiment's store.gpu.capacity;"
           " 0 for text mode)";
  }
  return "";
}

}  // namespace inferscale::remote
