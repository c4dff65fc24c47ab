#include "sim/runner.h"

#include <ftw.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "executor/cost_model/cost_model.h"
#include "policies/registry.h"
#include "sim/access_oracle.h"
#include "sim/batch_scheduler.h"
#include "sim/cost.h"
#include "sim/executor_factory.h"
#include "sim/run_folder.h"
#include "sim/trace_source.h"
#include "traces/error.h"

namespace inferscale {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// Whether a store tier of this run uses an offline policy (Belady), which reads the trace's
/// future from a file.
bool needs_future(const RunConfig& run) {
  const auto offline = [](const TierConfig& t) {
    const EvictionInfo* info = PolicyRegistry::find_eviction(t.eviction);
    return t.enabled && info != nullptr && info->offline;
  };
  return run.serving.mode == ServingMode::kKvInject &&
         (offline(run.store.gpu) || offline(run.store.host));
}

/// The trace's future for offline policies (Belady): next-access positions from a pre-pass
/// over the trace, only when a store tier of this run uses such a policy.
NextAccessFn future_of(const RunConfig& run, const std::string& trace) {
  if (!needs_future(run)) return {};
  auto oracle =
      std::make_shared<const AccessOracle>(AccessOracle::from_trace(trace, run.fast_paths));
  return [oracle](FactId fact, std::int64_t after) { return oracle->next_after(fact, after); };
}

constexpr const char* kVersion = "0.1.0";

json model_json(const ModelConfig& m) {
  return json{{"name", m.name},
              {"layers", m.layers},
              {"hidden", m.hidden},
              {"heads", m.heads},
              {"kv_heads", m.kv_heads},
              {"head_dim", m.head_dim},
              {"ffn", m.ffn},
              {"vocab", m.vocab},
              {"dtype_bytes", m.dtype_bytes},
              {"kv_bytes_per_token", m.kv_bytes_per_token()},
              {"weight_dtype_bytes", m.weight_dtype_bytes()},
              {"kv_dtype_bytes", m.kv_dtype_bytes()},
              {"weight_bytes", m.weight_bytes()},
              {"experts", m.experts},
              {"experts_active", m.experts_active},
              {"expert_ffn", m.expert_ffn},
              {"active_parameters", m.active_parameters()}};
}

json gpu_json(const GpuConfig& g) {
  return json{{"name", g.name},
              {"memory_bytes", g.memory_bytes},
              {"bf16_tflops", g.bf16_tflops},
              {"hbm_gbps", g.hbm_gbps},
              {"pcie_gbps", g.pcie_gbps},
              {"step_overhead_us", g.step_overhead_us},
              {"per_seq_overhead_us", g.per_seq_overhead_us},
              {"mfu", g.mfu},
              {"mbu", g.mbu},
              {"pcie_efficiency", g.pcie_efficiency},
              {"pcie_gen", g.pcie_gen},
              {"nvlink_gen", g.nvlink_gen},
              {"nvlink_gbps", g.nvlink_gbps},
              {"link_latency_us", g.link_latency_us},
              {"link_efficiency", g.link_efficiency}};
}

double ratio(std::uint64_t a, std::uint64_t b) {
  return b == 0 ? 0.0 : double(a) / double(b);
}

json tier_json(const TierConfig& t) {
  json params = json::object();
  for (const auto& [k, v] : t.eviction_params.values()) params[k] = v.text;
  json aparams = json::object();
  for (const auto& [k, v] : t.admission_params.values()) aparams[k] = v.text;
  return json{{"enabled", t.enabled},     {"capacity_bytes", t.capacity_bytes},
              {"eviction", t.eviction},   {"eviction_params", params},
              {"admission", t.admission}, {"admission_params", aparams}};
}

json host_tier_json(const TierConfig& t) {
  json j = tier_json(t);
  j["async_loads"] = t.async_loads;
  return j;
}

/// A tier's write policy and price, and for disk and remote their links; beside tier_json, so
/// that a run without them echoes what it did before.
json lower_tier_json(const TierConfig& t, const char* key) {
  json j = std::string(key) == "host" ? host_tier_json(t) : tier_json(t);
  j["write"] = to_string(t.write);
  j["price_per_gb_month"] = t.price_per_gb_month;
  j["price_source"] = t.price_source;
  if (std::string(key) == "disk") {
    j["read_gbps"] = t.read_gbps;
    j["write_gbps"] = t.write_gbps;
    j["latency_us"] = t.latency_us;
    j["queue_depth"] = t.queue_depth;
  } else if (std::string(key) == "remote") {
    j["gbps"] = t.read_gbps;
    j["latency_us"] = t.latency_us;
  }
  return j;
}

json node_json(const RunConfig& c) {
  const NodeConfig& n = c.node;
  if (n.gpus == 0) return json{{"preset", false}, {"replicas_per_node", 1}};
  return json{{"preset", true},
              {"name", n.name},
              {"gpus", n.gpus},
              {"replicas_per_node", c.replicas_per_node()},
              {"dram_bytes", n.dram_bytes},
              {"nvme_bytes", n.nvme_bytes()},
              {"nvme_read_gbps", n.nvme_drives * n.nvme_drive_read_gbps},
              {"nvme_write_gbps", n.nvme_drives * n.nvme_drive_write_gbps},
              {"nic_gbps", n.nic_gbps}};
}

/// USD per hour of the fleet: the GPUs it rents, and each tier below the GPU by the capacity it
/// provisions (a GPU tier's memory is in the GPU's price).
json cost_json(const RunConfig& c, const RunSummary& s) {
  const FleetCost cost = fleet_cost(c);
  json tiers = json::object();
  const std::pair<const char*, const TierCost*> lower[] = {
      {"host", &cost.host}, {"disk", &cost.disk}, {"remote", &cost.remote}};
  const TierConfig* configs[] = {&c.store.host, &c.store.disk, &c.store.remote};
  for (int i = 0; i < 3; ++i) {
    const auto& [name, t] = lower[i];
    if (!t->priced) continue;
    tiers[name] = json{{"capacity_gb", t->capacity_gb},
                       {"per_gb_month", t->per_gb_month},
                       {"per_hour", t->per_hour},
                       {"source", configs[i]->price_source}};
  }
  const double hours = s.makespan_s / 3600;
  return json{{"per_hour", cost.per_hour},
              {"gpus", cost.gpus},
              {"gpu_per_hour", cost.gpu_per_hour},
              {"gpu_source", c.prices.gpu_source},
              {"gpus_per_hour", cost.gpus_per_hour},
              {"tiers", tiers},
              {"per_million_requests",
               s.requests > 0 ? cost.per_hour * hours / double(s.requests) * 1e6 : 0.0}};
}

json tiers_json(const RunSummary& s) {
  const char* names[] = {"gpu", "host", "disk", "remote"};
  json j = json::object();
  for (int i = 0; i < 4; ++i) {
    const TierSummary& t = s.tiers[i];
    if (!t.enabled) continue;
    j[names[i]] =
        json{{"hits", t.hits},
             {"hit_ratio", ratio(t.hits, s.lookups)},
             {"lookups", t.lookups},
             {"hit_bytes", t.hit_bytes},
             {"bytes_in", t.bytes_in},
             {"writes", t.writes},
             {"bytes_out", t.bytes_out},
             {"loads", t.loads},
             {"evictions", t.evictions},
             {"drops", t.drops},
             {"capacity_bytes", t.capacity_bytes},
             {"peak_bytes", t.peak_bytes},
             {"final_bytes", t.final_bytes},
             {"occupancy_final", ratio(t.final_bytes, t.capacity_bytes)},
             {"load_wait_ms_total", double(t.load_wait_ns) / 1e6},
             {"load_wait_ms_mean", t.loads ? double(t.load_wait_ns) / 1e6 / double(t.loads) : 0.0}};
  }
  return j;
}

json links_json(const RunSummary& s) {
  const char* names[] = {"disk_read", "disk_write", "network_in", "network_out"};
  json j = json::object();
  for (int i = 0; i < 4; ++i) {
    const LinkSummary& l = s.links[i];
    if (l.transfers == 0) continue;
    j[names[i]] = json{{"bytes", l.bytes},
                       {"transfers", l.transfers},
                       {"busiest_node_busy_fraction", l.busiest_fraction}};
  }
  return j;
}

json executor_json(const ExecutorConfig& e) {
  json j{{"kind", e.kind}, {"profile", e.profile}};
  if (e.kind == "remote") {
    j["endpoints"] = e.endpoints;
    j["connect_timeout_s"] = e.connect_timeout_s;
    j["timeout_s"] = e.timeout_s;
  }
  if (e.kind == "gpu") {
    j["device"] = e.device;
    j["warm_rows"] = e.warm_rows;
    j["settle_ms"] = e.settle_ms;
  }
  if (e.kind == "gpu" || e.kind == "calibrated") j["copies_beside_pass"] = e.copies_beside_pass;
  return j;
}

/// The scheduler's name and parameters appear only when it is not the default, so that a default
/// run's summary.json is what it was before the scheduler could be chosen.
json scheduler_json(const SchedulerConfig& s) {
  json j{{"max_batch_tokens", s.max_batch_tokens},
         {"max_seqs", s.max_seqs},
         {"chunked_prefill", s.chunked_prefill}};
  if (s.name != SchedulerConfig{}.name) {
    j["name"] = s.name;
    json params = json::object();
    for (const auto& [key, value] : s.params.values()) params[key] = value.text;
    if (!params.empty()) j["params"] = params;
  }
  return j;
}

json store_json(const RunConfig& c) {
  json j{{"warm", c.store.warm},
         {"kv_dtype", to_string(c.store.kv_dtype)},
         {"gpu", tier_json(c.store.gpu)},
         {"host", host_tier_json(c.store.host)}};
  // The fleet's keys appear once a run uses them, so that other runs echo what they did before.
  const bool fleet = c.node.gpus > 0 || c.store.disk.enabled || c.store.remote.enabled ||
                     c.store.gpu.write == WritePolicy::kThrough;
  if (fleet) {
    j["gpu"]["write"] = to_string(c.store.gpu.write);
    j["host"] = lower_tier_json(c.store.host, "host");
    j["disk"] = lower_tier_json(c.store.disk, "disk");
    j["remote"] = lower_tier_json(c.store.remote, "remote");
  }
  return j;
}

json config_json(const RunConfig& c) {
  json trace{{"kind", c.trace.kind}};
  if (c.trace.kind == "file") trace["path"] = c.trace.path;
  return json{
      {"experiment", c.experiment},
      {"run", c.name},
      {"seed", c.seed},
      {"trace", trace},
      {"model", model_json(c.model)},
      {"gpu", gpu_json(c.gpu)},
      {"replicas", c.replicas},
      {"nodes", c.nodes},
      {"node", node_json(c)},
      {"tp", c.tp},
      {"weight_bytes_per_gpu", c.weight_bytes_per_gpu()},
      {"kv_bytes_per_token_per_gpu", c.kv_bytes_per_token_per_gpu()},
      {"fact_kv_bytes_per_token_per_gpu", c.fact_kv_bytes_per_token_per_gpu()},
      {"router", to_string(c.router)},
      {"scheduler", scheduler_json(c.scheduler)},
      {"serving",
       {{"mode", to_string(c.serving.mode)},
        {"k", c.serving.k},
        {"header_tokens", c.serving.header_tokens},
        {"footer_tokens", c.serving.footer_tokens},
        {"header_cache", c.serving.header_cache},
        {"rope", to_string(c.serving.rope)},
        {"cwe_window", c.serving.cwe_window},
        {"turn_tokens", c.serving.turn_tokens},
        {"miss_path", to_string(c.serving.miss_path)}}},
      {"store", store_json(c)},
      {"memory",
       {{"gpu_utilization", c.memory.gpu_utilization},
        {"activation_reserve_bytes", c.memory.activation_reserve_bytes},
        {"request_kv_bytes", c.request_kv_bytes()}}},
      {"executor", executor_json(c.executor)},
      {"slo", {{"ttft_ms", c.slo.ttft_ms}, {"tpot_ms", c.slo.tpot_ms}}},
  };
}

json pct_json(const Percentiles& p) {
  return json{{"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"mean", p.mean}, {"max", p.max}};
}

void write_file(const fs::path& path, const std::string& body) {
  std::ofstream f(path, std::ios::binary);
  f << body;
  f.close();
  if (!f) throw InputError(path.string(), std::string("write failed: ") + std::strerror(errno));
}

json summary_object(const RunConfig& c, const RunSummary& s) {
  return json{
      {"version", kVersion},
      {"results_version", kResultsVersion},
      {"seed", c.seed},
      {"config", config_json(c)},
      {"requests", s.requests},
      {"output_tokens", s.output_tokens},
      {"makespan_s", s.makespan_s},
      {"throughput", {{"requests_per_s", s.throughput_rps}, {"tokens_per_s", s.tokens_per_s}}},
      {"goodput",
       {{"requests_per_s", s.goodput_rps},
        {"fraction", ratio(s.good, s.requests)},
        {"slo_ttft_ms", c.slo.ttft_ms},
        {"slo_tpot_ms", c.slo.tpot_ms}}},
      {"ttft_ms", pct_json(s.ttft_ms)},
      {"tpot_ms", pct_json(s.tpot_ms)},
      {"e2e_ms", pct_json(s.e2e_ms)},
      {"queue_delay_ms", pct_json(s.queue_ms)},
      {"hit_ratio",
       {{"lookups", s.lookups},
        {"gpu_object", ratio(s.gpu_hits, s.lookups)},
        {"host_object", ratio(s.host_hits, s.lookups)},
        {"disk_object", ratio(s.disk_hits, s.lookups)},
        {"remote_object", ratio(s.remote_hits, s.lookups)},
        {"miss_object", ratio(s.misses, s.lookups)},
        {"gpu_byte", ratio(s.gpu_hit_bytes, s.lookup_bytes)},
        {"host_byte", ratio(s.host_hit_bytes, s.lookup_bytes)}}},
      {"store",
       {{"capacity_bytes", s.store_capacity_bytes},
        {"peak_bytes", s.store_peak_bytes},
        {"mean_bytes", s.store_mean_bytes},
        {"final_bytes", s.store_final_bytes},
        {"occupancy_mean",
         s.store_capacity_bytes ? s.store_mean_bytes / double(s.store_capacity_bytes) : 0.0}}},
      {"work",
       {{"steps", s.steps},
        {"prefill_tokens", s.prefill_tokens},
        {"encodes", s.encodes},
        {"encode_tokens", s.encode_tokens},
        {"memory_write_encodes", s.memory_write_encodes},
        {"host_loads", s.loads},
        {"preemptions", s.preemptions}}},
      {"executor_busy_fraction", s.busy_fraction},
      {"tiers", tiers_json(s)},
      {"links", links_json(s)},
      {"cost_usd", cost_json(c, s)},
      {"invariants",
       {{"max_batch_tokens_seen", s.max_batch_tokens_seen},
        {"max_batch_tokens", c.scheduler.max_batch_tokens},
        {"max_kv_blocks_used", s.max_kv_blocks_used},
        {"kv_blocks_total", s.kv_blocks_total},
        {"store_peak_bytes", s.store_peak_bytes},
        {"store_capacity_bytes_per_replica", c.store.gpu.capacity_bytes}}},
      {"trace", {{"facts", s.facts}, {"users", s.users}}},
      {"simulator", {{"wall_s", s.wall_s}, {"events_per_s", s.events_per_s}}},
  };
}

/// remove_tree, or an error naming the folder.
void remove_tree_or_throw(const fs::path& p) {
  if (!remove_tree(p)) {
    throw std::runtime_error("cannot remove " + p.string() + ": " + std::strerror(errno));
  }
}

/// After an executor failure: the requests completed so far and a summary marked failed go to
/// `<run>.partial/`, never to the run's folder. Returns what was kept, in words.
std::string keep_partial(const RunConfig& run, Simulator& sim, RunFolder& folder,
                         const fs::path& partial, const std::string& error) {
  try {
    const RunSummary s = sim.partial_summary();
    json j = summary_object(run, s);
    j["status"] = "failed";
    j["error"] = error;
    write_file(folder.tmp() / "summary.json", j.dump(2) + "\n");
    folder.commit(partial);
    return std::to_string(s.requests) + " completed requests kept in " + partial.string() + "/";
  } catch (const std::exception& e) {
    return std::string("partial results could not be kept: ") + e.what();
  }
}

}  // namespace

std::string summary_json(const RunConfig& c, const RunSummary& s) {
  return summary_object(c, s).dump(2) + "\n";
}

void validate_experiment(const ExperimentConfig& exp) {
  for (const auto& run : exp.runs) {
    check_trace_source(run);
    check_executor(run);
    if (run.serving.mode == ServingMode::kKvInject) {
      for (const TierConfig* t : {&run.store.gpu, &run.store.host}) {
        if (!t->enabled) continue;
        PolicyArgs args{t->eviction_params, t->capacity_bytes, run.seed};
        PolicyRegistry::make_eviction(t->eviction, args, t->eviction_where);
        PolicyArgs aargs{t->admission_params, t->capacity_bytes, run.seed};
        PolicyRegistry::make_admission(t->admission, aargs, t->admission_where);
      }
    }
    SchedulerRegistry::make(run.scheduler.name, run.scheduler.params, run.scheduler.where);
  }
}

std::vector<RunOutcome> run_experiment(const ExperimentConfig& exp, const RunnerOptions& opts) {
  for (const auto& name : opts.only_runs) {
    const bool known = std::any_of(exp.runs.begin(), exp.runs.end(),
                                   [&](const RunConfig& r) { return r.name == name; });
    if (!known) throw InputError("--runs " + name, "no run named '" + name + "' in " + exp.file);
  }
  validate_experiment(exp);
  std::vector<RunOutcome> outcomes;
  for (const auto& run : exp.runs) {
    if (!opts.only_runs.empty() &&
        std::find(opts.only_runs.begin(), opts.only_runs.end(), run.name) == opts.only_runs.end()) {
      continue;
    }
    const fs::path base = fs::path(opts.out_dir.empty() ? run.output.dir : opts.out_dir) / exp.name;
    // Locked for this process, written under a temporary folder of its own (sim/run_folder.h).
    RunFolder folder(base, run.name, opts.out_dir.empty() ? exp.file + ": output.dir" : "--out");
    const fs::path& tmp = folder.tmp();
    // A generated trace streams into the simulator unless a file is asked for or needed; its
    // facts are declared at t=0 only for a warm store (text mode stores nothing).
    const bool warm = run.store.warm && run.serving.mode == ServingMode::kKvInject;
    TraceOpener open = needs_future(run) ? TraceOpener{} : streamed_trace(run, warm);
    const std::string trace =
        open ? std::string() : materialize_trace(run, (base / ".traces").string());
    if (!open) open = [trace, fast = run.fast_paths] { return open_trace(trace, fast); };
    const fs::path dir = base / run.name;
    const fs::path partial = base / (run.name + ".partial");
    std::string failure, kept = "nothing ran";
    try {
      SimOutputs out;
      if (run.output.requests_csv) out.requests_csv = (tmp / "requests.csv").string();
      if (run.output.timeline) out.timeline_json = (tmp / "timeline.json").string();
      out.progress = opts.progress;
      out.partial_dir = tmp.string();
      // Prices that depend only on the plan: a replica's quiet steps may run back to back.
      out.fuse_quiet_steps = run.fast_paths && (run.executor.kind == "cost_model" ||
                                                run.executor.kind == "calibrated");
      Simulator sim(
          run, open, [&run](int i) { return make_executor(run, i); }, encode_pricing(run), out,
          future_of(run, trace));
      sim.set_load_cost(load_pricing(run));
      RunSummary summary;
      try {
        summary = sim.run();
      } catch (const ExecutorFailure& e) {
        failure = e.what();
        kept = keep_partial(run, sim, folder, partial, failure);
      }
      if (failure.empty()) {
        RunOutcome o{run, summary, dir.string()};
        write_file(tmp / "summary.json", summary_json(run, o.summary));
        folder.commit(dir);             // replaces an earlier result in one step
        remove_tree_or_throw(partial);  // left by an earlier failed attempt
        outcomes.push_back(std::move(o));
      }
    } catch (const ExecutorFailure& e) {
      failure = e.what();  // no executor at all (connection or handshake refused)
    }
    if (!failure.empty()) {
      throw ExecutorFailure("run " + exp.name + "/" + run.name + " failed: " + failure + " (" +
                            kept + ")");
    }
  }
  return outcomes;
}

void print_comparison(const std::vector<RunOutcome>& runs, std::FILE* out) {
  std::fprintf(out, "%-14s %-9s %4s %8s %10s %10s %10s %9s %9s %7s\n", "run", "mode", "k",
               "requests", "req/s", "TTFT p50", "TTFT p99", "TPOT p50", "E2E p50", "GPU hit");
  std::fprintf(out, "%-14s %-9s %4s %8s %10s %10s %10s %9s %9s %7s\n", "", "", "", "", "", "(ms)",
               "(ms)", "(ms)", "(ms)", "(obj)");
  for (const auto& o : runs) {
    const auto& s = o.summary;
    const bool inject = o.config.serving.mode == ServingMode::kKvInject;
    char hit[16] = "-";
    if (inject) std::snprintf(hit, sizeof(hit), "%.1f%%", 100.0 * ratio(s.gpu_hits, s.lookups));
    std::fprintf(out, "%-14s %-9s %4u %8llu %10.2f %10.2f %10.2f %9.2f %9.1f %7s\n",
                 o.config.name.c_str(), to_string(o.config.serving.mode), o.config.serving.k,
                 static_cast<unsigned long long>(s.requests), s.throughput_rps, s.ttft_ms.p50,
                 s.ttft_ms.p99, s.tpot_ms.p50, s.e2e_ms.p50, hit);
  }
  // Each kv_inject run against the text run with the same k (the comparison that matters).
  for (const auto& b : runs) {
    if (b.config.serving.mode != ServingMode::kKvInject) continue;
    for (const auto& a : runs) {
      if (a.config.serving.mode != ServingMode::kText || a.config.serving.k != b.config.serving.k ||
          a.summary.ttft_ms.p50 <= 0 || a.summary.throughput_rps <= 0) {
        continue;
      }
      std::fprintf(out, "%s vs %s: TTFT p50 %+.1f%%, TTFT p99 %+.1f%%, throughput x%.2f\n",
                   b.config.name.c_str(), a.config.name.c_str(),
                   100.0 * (b.summary.ttft_ms.p50 / a.summary.ttft_ms.p50 - 1),
                   100.0 * (b.summary.ttft_ms.p99 / a.summary.ttft_ms.p99 - 1),
                   b.summary.throughput_rps / a.summary.throughput_rps);
      break;
    }
  }
  for (const auto& o : runs) std::fprintf(out, "results: %s\n", o.dir.c_str());
}

}  // namespace inferscale
