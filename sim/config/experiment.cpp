#include "sim/config/experiment.h"

#include "sim/config/fleet_config.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "executor/remote/endpoint.h"
#include "sim/config/yaml_view.h"

namespace inferscale {

namespace fs = std::filesystem;

const char* to_string(ServingMode m) {
  return m == ServingMode::kText ? "text" : "kv_inject";
}
const char* to_string(RopeMode m) {
  return m == RopeMode::kPreRope ? "pre_rope" : "delta";
}
const char* to_string(MissPath m) {
  return m == MissPath::kEncode ? "encode" : "text";
}
const char* to_string(RouterKind r) {
  switch (r) {
    case RouterKind::kRoundRobin:
      return "round_robin";
    case RouterKind::kLeastLoaded:
      return "least_loaded";
    case RouterKind::kUserAffinity:
      return "user_affinity";
  }
  return "?";
}

const char* to_string(KvDtype d) {
  switch (d) {
    case KvDtype::kBf16:
      return "bf16";
    case KvDtype::kFp8:
      return "fp8";
    case KvDtype::kInt8:
      return "int8";
  }
  return "?";
}

namespace {

std::string known_presets(const char* folder) {
  std::string s;
  for (const auto& n : preset_names(folder)) s += (s.empty() ? "" : ", ") + n;
  return s;
}

/// The layers of `v` as one map, the first layer's value winning and maps merged key by key,
/// for readers of one node (the model's, in executor/).
YAML::Node merged(const YamlView& v) {
  YAML::Node out(YAML::NodeType::Map);
  for (const auto& k : v.keys()) {
    if (v.is_map(k)) {
      out[k] = merged(v.child(k));
    } else {
      out[k] = v.node(k);
    }
  }
  return out;
}

/// A model from an inline map (layered: `--set model.x=..` over the file's map).
ModelConfig parse_model(const YamlView& v) {
  v.reject_unknown(v.keys());  // duplicates in one layer; the keys are checked in executor/
  if (v.is_map("rope_scaling")) {
    const auto s = v.child("rope_scaling");
    s.reject_unknown(s.keys());
  }
  return parse_model_config(merged(v), [&v](const std::string& key_path) {
    const auto dot = key_path.rfind('.');
    if (dot == std::string::npos) return key_path.empty() ? v.where() : v.where(key_path);
    return v.child(key_path.substr(0, dot)).where(key_path.substr(dot + 1));
  });
}

/// `key: [[x, factor], ...]` (mfu_curve: x in tokens; attention_mbu_curve: in decodes): x
/// increasing from 1, `efficiency` x factor in (0, 1] (`efficiency_key` names it).
std::vector<std::pair<double, double>> parse_curve(const YamlView& v, const std::string& key,
                                                   const std::string& x_name,
                                                   const std::string& efficiency_key,
                                                   double efficiency) {
  std::vector<std::pair<double, double>> curve;
  if (!v.has(key)) return curve;
  const YAML::Node n = v.node(key);
  const std::string expected = "expected a list of [" + x_name + ", factor] points";
  if (!n.IsSequence() || n.size() == 0) v.fail(key, expected);
  for (std::size_t i = 0; i < n.size(); ++i) {
    const std::string point = "point " + std::to_string(i + 1) + ": ";
    if (!n[i].IsSequence() || n[i].size() != 2 || !n[i][0].IsScalar() || !n[i][1].IsScalar()) {
      v.fail(key, point + expected);
    }
    double x = 0, factor = 0;
    try {
      x = n[i][0].as<double>();
      factor = n[i][1].as<double>();
    } catch (const YAML::Exception&) {
      v.fail(key, point + "expected two numbers, [" + x_name + ", factor]");
    }
    if (!(x >= 1 && x <= 1e6)) v.fail(key, point + x_name + " must be in [1, 1e6]");
    if (!curve.empty() && x <= curve.back().first) {
      v.fail(key, point + x_name + " must increase from one point to the next");
    }
    if (!(factor > 0 && factor * efficiency <= 1)) {
      v.fail(key,
             point + "the factor must be positive and " + efficiency_key + " x factor at most 1");
    }
    curve.emplace_back(x, factor);
  }
  return curve;
}

GpuConfig parse_gpu(const YamlView& v) {
  v.reject_unknown({"name",
                    "memory",
                    "bf16_tflops",
                    "hbm_gbps",
                    "pcie_gbps",
                    "step_overhead_us",
                    "per_seq_overhead_us",
                    "mfu",
                    "mbu",
                    "pcie_efficiency",
                    "pcie_gen",
                    "fp8_tflops",
                    "nvlink_gen",
                    "nvlink_gbps",
                    "link_latency_us",
                    "link_efficiency",
                    "price_per_hour",
                    "price_source",
                    "mfu_curve",
                    "mfu_curve_source",
                    "attention_mbu_curve"});
  for (const char* k : {"memory", "bf16_tflops", "hbm_gbps", "pcie_gbps"}) {
    if (!v.has(k)) v.fail("", std::string("gpu: missing key '") + k + "'");
  }
  GpuConfig g;
  g.name = v.text("name", "custom");
  g.memory_bytes = v.bytes("memory", 0);
  if (g.memory_bytes == 0) v.fail("memory", "expected a positive size");
  g.bf16_tflops = v.number("bf16_tflops", 0, 1e-3, 1e6);
  g.fp8_tflops = v.number("fp8_tflops", 0, 0, 1e6);
  g.hbm_gbps = v.number("hbm_gbps", 0, 1e-3, 1e12);
  g.pcie_gbps = v.number("pcie_gbps", 0, 1e-3, 1e12);
  g.step_overhead_us = v.number("step_overhead_us", 500, 0, 1e7);
  g.per_seq_overhead_us = v.number("per_seq_overhead_us", 5, 0, 1e7);
  g.mfu = v.number("mfu", 0.6, 1e-3, 1);
  g.mbu = v.number("mbu", 0.8, 1e-3, 1);
  g.mfu_curve = parse_curve(v, "mfu_curve", "tokens", "mfu", g.mfu);
  g.attention_mbu_curve = parse_curve(v, "attention_mbu_curve", "decodes", "mbu", g.mbu);
  g.pcie_efficiency = v.number("pcie_efficiency", 0.8, 1e-3, 1);
  g.pcie_gen = static_cast<std::uint32_t>(v.integer("pcie_gen", 0, 0, 16));
  g.nvlink_gen = static_cast<std::uint32_t>(v.integer("nvlink_gen", 0, 0, 16));
  g.nvlink_gbps = v.number("nvlink_gbps", 0, 0, 1e12);
  if (g.nvlink_gen > 0 && g.nvlink_gbps == 0) {
    v.fail("nvlink_gbps", "nvlink_gen " + std::to_string(g.nvlink_gen) +
                              " needs a positive nvlink_gbps (per GPU, one direction)");
  }
  if (g.nvlink_gen == 0 && g.nvlink_gbps > 0) {
    v.fail("nvlink_gen", "nvlink_gbps is set: give the NVLink generation (1 or more)");
  }
  g.link_latency_us = v.number("link_latency_us", 1, 0, 1e6);
  g.link_efficiency = v.number("link_efficiency", 0.8, 1e-3, 1);
  g.price_per_hour = v.number("price_per_hour", 0, 0, 1e6);
  g.price_source = v.text("price_source", "");
  return g;
}

/// `model: name` (preset), `model: path.yaml`, or an inline map.
ModelConfig model_of(const YamlView& top) {
  if (top.is_map("model")) return parse_model(top.child("model"));
  return load_model_config(top.text("model", "llama-3.1-8b"), top.where("model"));
}

/// `gpu: name` (preset), `gpu: path.yaml`, or an inline map.
GpuConfig gpu_of(const YamlView& top) {
  if (top.is_map("gpu")) return parse_gpu(top.child("gpu"));
  return load_gpu(top.text("gpu", "h200"), top.where("gpu"));
}

/// `eviction: lru` or `eviction: {name: lfu, aging_period: 10}`.
void parse_policy(const YamlView& tier, const char* key, const std::string& fallback,
                  std::string& name, Params& params) {
  params = Params(tier.where(key));
  if (!tier.is_map(key)) {
    name = tier.text(key, fallback);
    return;
  }
  const auto p = tier.child(key);
  name = p.text("name", "");
  if (name.empty()) p.fail("", "expected key 'name' naming the policy");
  for (const auto& k : p.keys()) {
    if (k == "name") continue;
    params.set(k, p.scalar(k), p.where(k));
  }
}

TierConfig parse_tier(const YamlView& store, const char* key, std::uint64_t gpu_bytes,
                      bool default_enabled, const std::string& default_capacity,
                      const NodeConfig& node) {
  TierConfig t;
  t.where = store.where(key);
  t.eviction_where = t.where + ".eviction";
  t.admission_where = t.where + ".admission";
  if (!store.has(key)) {
    t.enabled = default_enabled;
    if (default_enabled) {
      t.capacity_bytes =
          static_cast<std::uint64_t>(std::stod(default_capacity) / 100.0 * double(gpu_bytes));
    }
    return t;
  }
  const auto v = store.child(key);
  const std::string k = key;
  std::vector<std::string> allowed{"capacity", "eviction",           "admission",
                                   "write",    "price_per_gb_month", "price_source"};
  if (k == "host") allowed.push_back("async_loads");
  if (k == "disk")
    allowed.insert(allowed.end(), {"read_gbps", "write_gbps", "latency_us", "queue_depth"});
  if (k == "remote") allowed.insert(allowed.end(), {"gbps", "latency_us"});
  v.reject_unknown(allowed);
  if (k == "host") t.async_loads = v.boolean("async_loads", false);
  parse_tier_fleet_keys(v, key, node, t);
  t.capacity_bytes = v.bytes("capacity", 0, gpu_bytes);
  t.enabled = t.capacity_bytes > 0;
  parse_policy(v, "eviction", "lru", t.eviction, t.eviction_params);
  parse_policy(v, "admission", "always", t.admission, t.admission_params);
  t.eviction_where = v.where("eviction");
  t.admission_where = v.where("admission");
  return t;
}

std::uint64_t activation_reserve(const ModelConfig& m, const SchedulerConfig& s) {
  // Activations of one step (residual, attention and MLP intermediates) plus the logits of the
  // sampled tokens, plus 1 GiB for the CUDA context and workspaces.
  const std::uint64_t per_token = (4ull * m.hidden + 2ull * m.ffn) * m.dtype_bytes;
  return std::uint64_t(s.max_batch_tokens) * per_token + std::uint64_t(s.max_seqs) * m.vocab * 4 +
         (1ull << 30);
}

/// `trace: file.jsonl`, `trace: {path: ...}`, `{generate: {...}}` or `{locomo: {...}}`.
TraceSource parse_trace_source(const YamlView& v) {
  if (!v.has("trace"))
    v.fail("", "missing key 'trace' (a JSONL file, {generate: ...} or {locomo: ...})");
  TraceSource trace;
  trace.where = v.where("trace");
  if (v.is_map("trace")) {
    const auto t = v.child("trace");
    t.reject_unknown({"path", "generate", "locomo"});
    if (t.has("path")) {
      trace.path = t.text("path", "");
    } else if (t.has("generate")) {
      trace.kind = "generate";
      trace.options = t.child("generate");
    } else if (t.has("locomo")) {
      trace.kind = "locomo";
      trace.options = t.child("locomo");
    } else {
      t.fail("", "expected one of the keys path, generate, locomo");
    }
  } else {
    trace.path = v.text("trace", "");
  }
  if (trace.kind == "file" && !path_exists(trace.path, v.where("trace"))) {
    v.fail("trace", "trace file '" + trace.path + "' not found");
  }
  return trace;
}

RouterKind parse_router(const YamlView& v) {
  const auto router =
      v.choice("router", "user_affinity", {"round_robin", "least_loaded", "user_affinity"});
  return router == "round_robin"    ? RouterKind::kRoundRobin
         : router == "least_loaded" ? RouterKind::kLeastLoaded
                                    : RouterKind::kUserAffinity;
}

SchedulerConfig parse_scheduler(const YamlView& v) {
  SchedulerConfig c;
  if (!v.has("scheduler")) return c;
  const auto s = v.child("scheduler");
  s.reject_unknown({"max_batch_tokens", "max_seqs", "chunked_prefill", "name", "params"});
  c.max_batch_tokens = static_cast<std::uint32_t>(s.integer("max_batch_tokens", 8192, 16, 1 << 24));
  c.max_seqs = static_cast<std::uint32_t>(s.integer("max_seqs", 256, 1, 1 << 20));
  c.chunked_prefill = s.boolean("chunked_prefill", true);
  c.name = s.text("name", c.name);  // checked against the registry by validate_experiment
  c.where = s.where("name");
  c.params = Params(s.where("params"));
  if (s.has("params")) {
    const auto p = s.child("params");
    for (const auto& k : p.keys()) c.params.set(k, p.scalar(k), p.where(k));
  }
  return c;
}

ServingConfig parse_serving(const YamlView& v) {
  ServingConfig c;
  if (!v.has("serving")) return c;
  const auto s = v.child("serving");
  s.reject_unknown({"mode", "k", "header_tokens", "footer_tokens", "header_cache", "rope",
                    "cwe_window", "turn_tokens", "miss_path"});
  c.mode = s.choice("mode", "kv_inject", {"text", "kv_inject"}) == "text" ? ServingMode::kText
                                                                          : ServingMode::kKvInject;
  c.k = static_cast<std::uint32_t>(s.integer("k", 50, 0, 1 << 16));
  c.header_tokens = static_cast<std::uint32_t>(s.integer("header_tokens", 64, 0, 1 << 20));
  c.footer_tokens = static_cast<std::uint32_t>(s.integer("footer_tokens", 16, 0, 1 << 20));
  c.header_cache = s.boolean("header_cache", true);
  c.rope = s.choice("rope", "pre_rope", {"pre_rope", "delta"}) == "pre_rope" ? RopeMode::kPreRope
                                                                             : RopeMode::kDelta;
  c.cwe_window = static_cast<std::uint32_t>(s.integer("cwe_window", 0, 0, 1 << 16));
  c.turn_tokens = static_cast<std::uint32_t>(s.integer("turn_tokens", 26, 0, 1 << 20));
  c.miss_path = s.choice("miss_path", "encode", {"encode", "text"}) == "encode" ? MissPath::kEncode
                                                                                : MissPath::kText;
  return c;
}

/// `memory:`; the activation reserve, unless given, follows the model and the step size.
MemoryConfig parse_memory(const YamlView& v, const ModelConfig& model,
                          const SchedulerConfig& scheduler) {
  MemoryConfig c;
  if (v.has("memory")) {
    const auto m = v.child("memory");
    m.reject_unknown({"gpu_utilization", "activation_reserve"});
    c.gpu_utilization = m.number("gpu_utilization", 0.9, 0.01, 1.0);
    c.activation_reserve_bytes = m.bytes("activation_reserve", 0);
  }
  if (c.activation_reserve_bytes == 0) {
    c.activation_reserve_bytes = activation_reserve(model, scheduler);
  }
  return c;
}

StoreConfig parse_store(const YamlView& v, std::uint64_t gpu_bytes, const NodeConfig& node) {
  const YamlView store = v.has("store") ? v.child("store") : YamlView({}, "store");
  store.reject_unknown({"warm", "kv_dtype", "gpu", "host", "disk", "remote"});
  StoreConfig c;
  c.warm = store.boolean("warm", true);
  const auto dtype = store.choice("kv_dtype", "bf16", {"bf16", "fp8", "int8"});
  c.kv_dtype_where = store.where("kv_dtype");
  c.kv_dtype = dtype == "fp8" ? KvDtype::kFp8 : dtype == "int8" ? KvDtype::kInt8 : KvDtype::kBf16;
  c.gpu = parse_tier(store, "gpu", gpu_bytes, true, "30", node);
  c.host = parse_tier(store, "host", gpu_bytes, false, "0", node);
  c.disk = parse_tier(store, "disk", gpu_bytes, false, "0", node);
  c.remote = parse_tier(store, "remote", gpu_bytes, false, "0", node);
  return c;
}

ExecutorConfig parse_executor(const YamlView& v) {
  ExecutorConfig c;
  c.where = v.where("executor");
  if (!v.has("executor")) return c;
  const auto e = v.child("executor");
  e.reject_unknown({"kind", "profile", "endpoints", "device", "connect_timeout_s", "timeout_s",
                    "warm_rows", "settle_ms", "copies_beside_pass", "copy_inflight_mb"});
  c.kind = e.text("kind", "cost_model");
  c.where = e.where("kind");
  c.profile = e.text("profile", "");
  c.device = e.choice("device", "cuda", {"cuda", "cpu"});
  c.connect_timeout_s = e.number("connect_timeout_s", 10, 0.001, 86400);
  c.timeout_s = e.number("timeout_s", 60, 0.001, 86400);
  c.warm_rows = static_cast<std::uint32_t>(e.integer("warm_rows", 512, 0, 65536));
  c.settle_ms = e.number("settle_ms", 200, 0, 60000);
  c.copies_beside_pass = e.boolean("copies_beside_pass", true);
  c.copy_inflight_mb = static_cast<std::uint32_t>(e.integer("copy_inflight_mb", 64, 1, 65536));
  if (e.is_sequence("endpoints")) {
    for (const auto& n : e.node("endpoints")) {
      const auto endpoint = remote::parse_endpoint(n.Scalar());
      if (!endpoint || endpoint->port == 0) {
        e.fail("endpoints", "'" + n.Scalar() + "' is not HOST:PORT (e.g. 127.0.0.1:7070)");
      }
      c.endpoints.push_back(n.Scalar());
    }
  }
  if (c.kind == "calibrated" && c.profile.empty()) {
    e.fail("kind", "executor kind 'calibrated' needs 'profile: <file>'");
  }
  if (c.kind == "remote" && c.endpoints.empty()) {
    e.fail("kind", "executor kind 'remote' needs 'endpoints: [HOST:PORT, ...]'");
  }
  return c;
}

SloConfig parse_slo(const YamlView& v) {
  SloConfig c;
  if (!v.has("slo")) return c;
  const auto s = v.child("slo");
  s.reject_unknown({"ttft_ms", "tpot_ms"});
  c.ttft_ms = s.number("ttft_ms", 2000, 0, 1e9);
  c.tpot_ms = s.number("tpot_ms", 100, 0, 1e9);
  return c;
}

OutputConfig parse_output(const YamlView& v) {
  OutputConfig c;
  if (!v.has("output")) return c;
  const auto o = v.child("output");
  o.reject_unknown({"dir", "timeline", "requests_csv"});
  c.dir = o.text("dir", "results");
  c.timeline = o.boolean("timeline", false);
  c.requests_csv = o.boolean("requests_csv", true);
  return c;
}

/// `tp: 1|2|4|8`: GPUs per replica (tensor parallel). Query heads must split evenly; KV heads
/// split evenly or are replicated (tp a multiple of kv_heads).
std::uint32_t parse_tp(const YamlView& v, const ModelConfig& m) {
  const auto tp = static_cast<std::uint32_t>(v.integer("tp", 1, 1, 8));
  if (tp != 1 && tp != 2 && tp != 4 && tp != 8) {
    v.fail("tp", "expected 1, 2, 4 or 8 GPUs per replica, got " + std::to_string(tp));
  }
  if (m.heads % tp != 0) {
    v.fail("tp", "model '" + m.name + "' has " + std::to_string(m.heads) +
                     " attention heads, not divisible by tp " + std::to_string(tp));
  }
  if (m.kv_heads % tp != 0 && tp % m.kv_heads != 0) {
    v.fail("tp", "model '" + m.name + "' has " + std::to_string(m.kv_heads) + " KV heads: tp " +
                     std::to_string(tp) + " must divide them or be a multiple of them");
  }
  return tp;
}

/// Memory feasibility on each GPU of a replica: its share of the weights + reserve + store +
/// at least one block per sequence.
void check_memory_fits(const YamlView& v, const RunConfig& r) {
  const double usable = r.memory.gpu_utilization * double(r.gpu.memory_bytes);
  const double weights = double(r.weight_bytes_per_gpu());
  const double fixed = weights + double(r.memory.activation_reserve_bytes);
  auto gib = [](double b) { return std::to_string(b / double(1ull << 30)).substr(0, 6) + " GiB"; };
  if (fixed >= usable) {
    v.fail("model", "model '" + r.model.name + "' does not fit on " + r.gpu.name + " at tp " +
                        std::to_string(r.tp) + ": weights per GPU " + gib(weights) +
                        " + activation reserve " + gib(double(r.memory.activation_reserve_bytes)) +
                        " >= usable " + gib(usable));
  }
  if (r.serving.mode == ServingMode::kKvInject &&
      double(r.store.gpu.capacity_bytes) + fixed >= usable) {
    throw InputError(r.store.gpu.where, "the GPU store (" +
                                            gib(double(r.store.gpu.capacity_bytes)) +
                                            ") does not fit: " + r.gpu.name + " has " +
                                            gib(usable) + " usable, weights and reserve take " +
                                            gib(fixed) + ", and request KV needs the rest");
  }
}

RunConfig parse_run(const YamlView& v, const std::string& experiment, const std::string& name) {
  v.reject_unknown({"experiment", "description", "seed",      "trace",   "model", "gpu",
                    "replicas",   "router",      "scheduler", "serving", "store", "memory",
                    "executor",   "slo",         "output",    "runs",    "name",  "fast_paths",
                    "tp",         "weights",     "kv_cache",  "node",    "nodes", "prices"});
  RunConfig r;
  r.experiment = experiment;
  r.name = name;
  r.seed = static_cast<std::uint64_t>(v.integer("seed", 1, 0, INT64_MAX));
  r.trace = parse_trace_source(v);
  r.model = model_of(v);
  r.node = node_of(v);
  if (!r.node.gpu.empty() && !v.has("gpu")) {
    r.gpu = load_gpu(r.node.gpu, r.node.where);
  } else {
    r.gpu = gpu_of(v);
    if (!r.node.gpu.empty() && r.gpu.name != r.node.gpu) {
      v.fail("gpu", "node '" + r.node.name + "' has " + r.node.gpu + " GPUs, not " + r.gpu.name);
    }
  }
  r.replicas = static_cast<std::uint32_t>(v.integer("replicas", 1, 1, 4096));
  r.tp = parse_tp(v, r.model);
  // Weights stored in fp8 (per-tensor scaled, as fp8 checkpoints are): half the bytes of bf16,
  // matrix products at the GPU's fp8 peak; activations and attention stay in the model's dtype.
  if (v.choice("weights", "bf16", {"bf16", "fp8"}) == "fp8") r.model.weight_bytes_per_param = 1;
  // A KV cache stored in fp8 (per-tensor scaled, as serving engines store one): half the bytes
  // per token of every KV block, request KV and stored facts alike, read and written at that
  // width; attention still computes at the model's dtype rate.
  if (v.choice("kv_cache", "bf16", {"bf16", "fp8"}) == "fp8") r.model.kv_bytes_per_elem = 1;
  r.fast_paths = v.boolean("fast_paths", true);
  r.router = parse_router(v);
  r.scheduler = parse_scheduler(v);
  r.serving = parse_serving(v);
  r.memory = parse_memory(v, r.model, r.scheduler);
  r.store = parse_store(v, r.gpu.memory_bytes, r.node);
  r.executor = parse_executor(v);
  r.slo = parse_slo(v);
  r.output = parse_output(v);
  resolve_fleet(v, r);
  if ((r.store.disk.enabled || r.store.remote.enabled) && r.executor.kind != "cost_model" &&
      r.executor.kind != "calibrated") {
    throw InputError(r.store.disk.enabled ? r.store.disk.where : r.store.remote.where,
                     "the disk and remote tiers need executor kind 'cost_model' or 'calibrated' "
                     "(the '" +
                         r.executor.kind + "' executor keeps no such copies)");
  }
  if (r.store.gpu.write == WritePolicy::kThrough && r.executor.kind != "cost_model" &&
      r.executor.kind != "calibrated") {
    throw InputError(r.store.gpu.write_where,
                     "gpu write: through needs executor kind 'cost_model' or 'calibrated' (the '" +
                         r.executor.kind + "' executor offloads only evicted facts)");
  }
  if (r.tp > 1 && r.executor.kind != "cost_model") {
    v.fail("tp", "tp " + std::to_string(r.tp) + " needs executor kind 'cost_model' (the '" +
                     r.executor.kind + "' executor runs one GPU)");
  }
  if (r.model.weight_bytes_per_param == 1 && r.executor.kind != "cost_model") {
    v.fail("weights", "fp8 weights need executor kind 'cost_model' (the '" + r.executor.kind +
                          "' executor computes in the model's dtype)");
  }
  if (r.model.kv_bytes_per_elem == 1 && r.executor.kind != "cost_model") {
    v.fail("kv_cache", "an fp8 KV cache needs executor kind 'cost_model' (the '" + r.executor.kind +
                           "' executor keeps KV in the model's dtype)");
  }
  if (r.store.kv_dtype != KvDtype::kBf16 && r.executor.kind != "cost_model" &&
      r.executor.kind != "calibrated") {
    throw InputError(r.store.kv_dtype_where,
                     std::string("store.kv_dtype ") + to_string(r.store.kv_dtype) +
                         " needs executor kind 'cost_model' or 'calibrated' (the '" +
                         r.executor.kind + "' executor stores fact KV in the model's dtype)");
  }
  if (r.model.moe() && r.executor.kind != "cost_model") {
    v.fail("model", "model '" + r.model.name +
                        "' is a mixture of experts: only executor kind "
                        "'cost_model' prices one (got '" +
                        r.executor.kind + "')");
  }
  check_memory_fits(v, r);
  return r;
}

/// "a.b.c=value" -> {a: {b: {c: value}}}, merged into `root`; errors name `flag`.
void apply_set(YAML::Node& root, const std::string& assignment, const std::string& flag) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) throw InputError(flag, "expected key.path=value");
  const std::string key = assignment.substr(0, eq);
  const std::string value = assignment.substr(eq + 1);
  YAML::Node parsed;
  try {
    parsed = YAML::Load(value);
  } catch (const YAML::Exception& e) {
    throw InputError(flag, "cannot parse the value: " + e.msg);
  }
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const auto dot = key.find('.', start);
    parts.push_back(key.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  std::vector<YAML::Node> chain{root};
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node next = chain.back()[parts[i]];
    if (!next.IsMap()) {
      chain.back()[parts[i]] = YAML::Node(YAML::NodeType::Map);
      next = chain.back()[parts[i]];
    }
    chain.push_back(next);
  }
  chain.back()[parts.back()] = parsed;
}

}  // namespace

std::uint64_t RunConfig::request_kv_bytes() const {
  const double usable = memory.gpu_utilization * double(gpu.memory_bytes);
  // In text mode there is no fact store: its memory serves request KV.
  const double store_bytes =
      serving.mode == ServingMode::kKvInject ? double(store.gpu.capacity_bytes) : 0.0;
  const double left = usable - double(weight_bytes_per_gpu()) -
                      double(memory.activation_reserve_bytes) - store_bytes;
  return left > 0 ? static_cast<std::uint64_t>(left) : 0;
}

std::uint64_t RunConfig::fact_kv_bytes_per_token_per_gpu() const {
  if (store.kv_dtype == KvDtype::kBf16) return kv_bytes_per_token_per_gpu();
  // A K and a V head vector per layer and KV head: one byte per value and its fp32 scale
  // (kv_format_vector_bytes of kernels/reference/kv_quant.h).
  return 2ull * model.layers * model.kv_heads_per_gpu(tp) * (std::uint64_t(model.head_dim) + 4);
}

ModelConfig load_model(const std::string& name_or_path, const std::string& where) {
  return load_model_config(name_or_path, where);
}

GpuConfig load_gpu(const std::string& name_or_path, const std::string& where) {
  const auto path = preset_path(name_or_path, "gpus");
  if (!path_exists(path, where)) {
    throw InputError(where, "unknown gpu '" + name_or_path + "' (presets: " +
                                known_presets("gpus") + "; or give a path to a .yaml file)");
  }
  return parse_gpu(YamlView({{load_yaml_file(path), path}}, ""));
}

ExperimentConfig load_experiment(const std::string& file, const std::vector<std::string>& sets) {
  return load_experiment(load_yaml_file(file), file, sets);
}

ExperimentConfig load_experiment(const YAML::Node& root, const std::string& file,
                                 const std::vector<std::string>& sets) {
  ExperimentConfig exp;
  exp.file = file;
  if (!root.IsMap()) throw InputError(yaml_position(root, file), "expected a map of keys");
  // One layer per flag, named by it, the last flag first (it wins over the earlier ones).
  std::vector<YamlLayer> set_layers;
  std::map<std::string, std::vector<YamlLayer>> run_set_layers;
  for (auto s = sets.rbegin(); s != sets.rend(); ++s) {
    YAML::Node node(YAML::NodeType::Map);
    if (s->rfind("runs.", 0) == 0) {
      const auto dot = s->find('.', 5);
      const auto eq = s->find('=');
      if (dot == std::string::npos || (eq != std::string::npos && dot > eq)) {
        throw InputError("--set " + *s, "expected runs.<name>.key.path=value");
      }
      apply_set(node, s->substr(dot + 1), "--set " + *s);
      run_set_layers[s->substr(5, dot - 5)].push_back({node, "--set " + *s});
    } else {
      apply_set(node, *s, "--set " + *s);
      set_layers.push_back({node, "--set " + *s});
    }
  }
  const YamlLayer base{root, file};
  std::vector<YamlLayer> top_layers = set_layers;
  top_layers.push_back(base);
  const YamlView top(top_layers, "");
  exp.name = top.text("experiment", fs::path(file).stem().string());

  if (!top.has("runs")) {
    exp.runs.push_back(parse_run(top, exp.name, "default"));
  } else {
    const YAML::Node runs = root["runs"];
    if (!runs.IsSequence() || runs.size() == 0) {
      top.fail("runs", "expected a non-empty list of runs, each with a 'name'");
    }
    std::vector<std::string> names;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const YAML::Node run = runs[i];
      const std::string where = yaml_position(run, file) + ": runs[" + std::to_string(i) + "]";
      if (!run.IsMap() || !run["name"]) throw InputError(where, "a run needs a 'name'");
      const std::string name = run["name"].Scalar();
      if (std::find(names.begin(), names.end(), name) != names.end()) {
        throw InputError(where, "duplicate run name '" + name + "'");
      }
      names.push_back(name);
      if (run["runs"]) throw InputError(where, "runs cannot be nested");
      std::vector<YamlLayer> layers;
      if (auto it = run_set_layers.find(name); it != run_set_layers.end()) {
        layers = it->second;
      }
      layers.insert(layers.end(), set_layers.begin(), set_layers.end());
      layers.push_back({run, file});
      YAML::Node base_without_runs(YAML::NodeType::Map);
      for (const auto& kv : root) {
        if (kv.first.Scalar() != "runs") base_without_runs[kv.first] = kv.second;
      }
      layers.push_back({base_without_runs, file});
      exp.runs.push_back(parse_run(YamlView(layers, ""), exp.name, name));
    }
    for (const auto& [name, layers] : run_set_layers) {
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        throw InputError("--set runs." + name, "no run named '" + name + "'");
      }
    }
  }
  return exp;
}

}  // namespace inferscale
