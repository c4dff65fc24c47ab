#pragma once
// @brief Experiment configuration: YAML -> validated RunConfigs (configs/README.md is the
// reference). Every error is an InputError at file:line:column with the key path.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <vector>

#include "executor/model_config.h"
#include "policies/params.h"
#include "sim/config/yaml_view.h"
#include "traces/types.h"

namespace inferscale {

enum class ServingMode { kText, kKvInject };
enum class RopeMode { kPreRope, kDelta };
enum class MissPath { kEncode, kText };
enum class RouterKind { kRoundRobin, kLeastLoaded, kUserAffinity };
/// How stored fact KV is kept in every tier and moved between them (kernels/reference/kv_quant.h
/// defines the formats): kBf16 the model's own dtype; kFp8 and kInt8 one byte per value plus
/// one fp32 scale per head vector. Request KV always stays in the model's dtype.
enum class KvDtype { kBf16, kFp8, kInt8 };

const char* to_string(ServingMode m);
const char* to_string(RopeMode m);
const char* to_string(MissPath m);
const char* to_string(RouterKind r);
const char* to_string(KvDtype d);

struct TraceSource {
  std::string path;           // a JSONL trace file (kind "file")
  std::string kind = "file";  // file | generate | locomo
  YamlView options{{}, ""};   // generate/locomo options, layered like the rest of the config
  std::string where;          // position of the trace key, for errors while materializing
};

struct SchedulerConfig {
  std::uint32_t max_batch_tokens = 8192;  // per step: decodes + prefill chunks + encodes
  std::uint32_t max_seqs = 256;
  bool chunked_prefill = true;
  std::string name = "continuous";  // a registered BatchScheduler (sim/batch_scheduler.h)
  Params params;                    // its parameters (scheduler.params)
  std::string where;                // position of `name`, for errors
};

struct ServingConfig {
  ServingMode mode = ServingMode::kKvInject;
  std::uint32_t k = 50;  // facts used per request (the best k of the trace's ranking)
  std::uint32_t header_tokens = 64;
  std::uint32_t footer_tokens = 16;
  bool header_cache = true;  // shared header prefix-cached per replica (both modes)
  RopeMode rope = RopeMode::kPreRope;
  std::uint32_t cwe_window = 0;    // w: turns of conversation before the fact when encoding
  std::uint32_t turn_tokens = 26;  // tokens per context turn when the trace has none
  MissPath miss_path = MissPath::kEncode;
};

/// What a tier does with a fact towards the next enabled tier below it: kBack writes it there
/// when it leaves this tier (an eviction demotes it), kThrough when it enters this tier (a
/// memory write or an encode reaches the tier below at once; an eviction then drops it, its copy
/// already below), kNone never (an eviction drops it).
enum class WritePolicy { kNone, kThrough, kBack };
const char* to_string(WritePolicy w);

struct TierConfig {
  bool enabled = false;
  std::uint64_t capacity_bytes = 0;
  std::string eviction = "lru";
  std::string admission = "always";
  Params eviction_params;
  Params admission_params;
  std::string where;           // position of the tier, for capacity errors
  std::string eviction_where;  // position of `eviction`, for policy errors
  std::string admission_where;
  /// Host tier only: loads run on a copy engine beside the compute (BatchPlan::async_loads); a
  /// request whose facts come from the host tier is prefilled once its loads are done.
  bool async_loads = false;
  WritePolicy write = WritePolicy::kNone;
  std::string write_where;
  // disk and remote: the path that reaches the tier (disk: the node's NVMe drives; remote: the
  // node's network link), per node, in GB/s (1e9 bytes), and its latency per transfer.
  double read_gbps = 0, write_gbps = 0;
  double latency_us = 0;
  std::uint32_t queue_depth = 0;  // disk: transfers in flight at most per node (0: no limit)
  double price_per_gb_month = 0;  // USD per GB (1e9 bytes) of capacity per month
  std::string price_source;
};

/// One machine of the fleet: G GPUs sharing host DRAM, local NVMe drives and a network link
/// (configs/nodes/). Without a `node` key every replica is a node of its own with no limits.
struct NodeConfig {
  std::string name;        // empty: no preset (a node per replica)
  std::string gpu;         // the GPU preset its GPUs are
  std::uint32_t gpus = 0;  // 0: no preset
  std::uint64_t dram_bytes = 0;
  std::uint32_t nvme_drives = 0;
  std::uint64_t nvme_drive_bytes = 0;
  double nvme_drive_read_gbps = 0, nvme_drive_write_gbps = 0;
  double nvme_latency_us = 0;
  std::uint32_t nvme_queue_depth = 0;
  double nic_gbps = 0;  // the node's network bandwidth (all its NICs), GB/s each way
  double network_latency_us = 0;
  double dram_price_per_gb_month = 0, nvme_price_per_gb_month = 0, remote_price_per_gb_month = 0;
  std::string price_source;
  std::string where;
  std::uint64_t nvme_bytes() const { return std::uint64_t(nvme_drives) * nvme_drive_bytes; }
};

/// What the fleet costs: GPUs by the hour, tiers by provisioned capacity.
struct PriceConfig {
  double gpu_per_hour = 0;  // USD per GPU-hour (default: the GPU preset's price_per_hour)
  std::string gpu_source;
};

struct StoreConfig {
  TierConfig gpu;
  TierConfig host;
  TierConfig disk;
  TierConfig remote;
  bool warm = true;  // `fact` records (memory at trace start) are resident at t=0, free of cost
  KvDtype kv_dtype = KvDtype::kBf16;
  std::string kv_dtype_where;  // position of store.kv_dtype, for errors
};

struct MemoryConfig {
  double gpu_utilization = 0.9;  // fraction of GPU memory the server may use (vLLM's default)
  std::uint64_t activation_reserve_bytes = 0;  // 0: derived from max_batch_tokens
};

struct ExecutorConfig {
  std::string kind = "cost_model";     // cost_model | calibrated | gpu | remote
  std::string profile;                 // calibrated
  std::vector<std::string> endpoints;  // remote
  double connect_timeout_s = 10;       // remote: TCP connect
  double timeout_s = 60;               // remote: the handshake's answer and each step's result
  std::string device = "cuda";         // gpu
  std::uint32_t warm_rows = 512;       // gpu: products warmed for row counts 1..warm_rows
  double settle_ms = 200;              // gpu: forward passes before the first prefill step
  /// gpu, calibrated: a step's copies that its pass does not need issued beside the pass
  bool copies_beside_pass = true;
  std::uint32_t copy_inflight_mb = 64;  // gpu: MiB of copies queued per copy lane before waiting
  std::string where;                    // position of executor.kind, for errors
};

struct SloConfig {
  double ttft_ms = 2000;
  double tpot_ms = 100;
};

struct OutputConfig {
  std::string dir = "results";
  bool timeline = false;
  bool requests_csv = true;
};

struct RunConfig {
  std::string experiment;
  std::string name;
  std::uint64_t seed = 1;
  TraceSource trace;
  ModelConfig model;
  GpuConfig gpu;
  std::uint32_t replicas = 1;
  NodeConfig node;
  std::uint32_t nodes = 1;  // replicas fill nodes in order, replicas_per_node() each
  PriceConfig prices;
  std::uint32_t tp = 1;  // GPUs per replica, tensor parallel; memory figures below are per GPU
  // Off: every behaviour takes the general path (no fused decode steps, the built-in LRU through
  // the policy interface like a user's policy, the general trace parser); results are identical.
  bool fast_paths = true;
  RouterKind router = RouterKind::kUserAffinity;
  SchedulerConfig scheduler;
  ServingConfig serving;
  StoreConfig store;
  MemoryConfig memory;
  ExecutorConfig executor;
  SloConfig slo;
  OutputConfig output;
  std::string echo_yaml;  // the resolved config, echoed into summary.json

  /// Bytes of one GPU's memory left for request KV after weights, reserve and the fact store.
  std::uint64_t request_kv_bytes() const;
  /// The model's weights on one GPU of a replica.
  std::uint64_t weight_bytes_per_gpu() const { return model.weight_bytes(tp); }
  /// KV of one token on one GPU of a replica (its KV-head share): what a GPU block or a stored
  /// fact costs in the store tiers, which are per GPU.
  std::uint64_t kv_bytes_per_token_per_gpu() const { return model.kv_bytes_per_token(tp); }
  /// Fact KV of one token on one GPU of a replica in store.kv_dtype: what a stored fact costs in
  /// every tier and what its loads, offloads and demotions move.
  std::uint64_t fact_kv_bytes_per_token_per_gpu() const;
  /// Replicas on one node: its GPUs over tp, or 1 without a node preset.
  std::uint32_t replicas_per_node() const { return node.gpus > 0 ? node.gpus / tp : 1; }
  /// Nodes that `n` replicas fill: whole nodes of replicas_per_node() with a preset, else one
  /// per replica.
  std::uint32_t nodes_for(std::uint32_t n) const {
    return node.gpus > 0 ? (n + replicas_per_node() - 1) / replicas_per_node() : n;
  }
  /// GPUs the fleet rents: whole nodes with a preset, else replicas x tp.
  std::uint64_t gpus_billed() const { return gpus_billed(replicas, nodes); }
  std::uint64_t gpus_billed(std::uint32_t n_replicas, std::uint32_t n_nodes) const {
    return node.gpus > 0 ? std::uint64_t(n_nodes) * node.gpus : std::uint64_t(n_replicas) * tp;
  }
  /// Whether a tier below the GPU's keeps facts (host, disk or remote).
  bool lower_tiers() const {
    return store.host.enabled || store.disk.enabled || store.remote.enabled;
  }
};

struct ExperimentConfig {
  std::string name;
  std::string file;
  std::vector<RunConfig> runs;
};

/// Parses and validates an experiment file. `sets` are "key.path=value" overrides applied to the
/// base config of every run (or "runs.<name>.key=value" to one run).
ExperimentConfig load_experiment(const std::string& file, const std::vector<std::string>& sets);
/// The same, from a document already read (an experiment inlined in a plan file); `file` names
/// it in errors and positions, and is the default experiment name (its stem).
ExperimentConfig load_experiment(const YAML::Node& root, const std::string& file,
                                 const std::vector<std::string>& sets);

/// Loads a model preset by name (configs/models/<name>.yaml) or path.
ModelConfig load_model(const std::string& name_or_path, const std::string& where);
/// Loads a GPU preset by name (configs/gpus/<name>.yaml) or path.
GpuConfig load_gpu(const std::string& name_or_path, const std::string& where);

}  // namespace inferscale
