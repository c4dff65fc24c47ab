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

const char* to_string(ServingMode m);
const char* to_string(RopeMode m);
const char* to_string(MissPath m);
const char* to_string(RouterKind r);

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
};

struct StoreConfig {
  TierConfig gpu;
  TierConfig host;
  bool warm = true;  // `fact` records (memory at trace start) are resident at t=0, free of cost
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
