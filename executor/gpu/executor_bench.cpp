#include "executor/gpu/executor_bench.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "executor/gpu/torch_compat.h"

namespace inferscale {

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

FactId fact_id(std::uint32_t request_slot, std::uint32_t j) {
  return FactId(request_slot + 1) * 1000000 + j;
}

/// FLOPs of a prefill of `n` computed tokens after `past` present ones: the layers' matrix
/// products, causal attention (QK^T and PV), and the LM head of the sampled token.
double prefill_flops(const ModelConfig& m, double n, double past) {
  const double h = m.hidden, q = double(m.heads) * m.head_dim, kv = double(m.kv_heads) * m.head_dim;
  const double linear = 2.0 * m.layers * (h * q + 2 * h * kv + q * h + 3 * h * m.ffn);
  const double keys = n * past + n * (n + 1) / 2;  // sum over queries of keys attended
  const double attention = 4.0 * m.layers * double(m.heads) * m.head_dim * keys;
  return n * linear + attention + 2.0 * double(m.vocab) * h;
}

struct Config {
  std::string mode;
  std::uint32_t batch, k;
};

/// The attention implementation a step's forwards ran: one name, "mixed" or "none".
std::string attention_kind(const AttentionCounts& c) {
  const int kinds = int(c.split_kv > 0) + int(c.flash > 0) + int(c.math > 0);
  if (kinds == 0) return "none";
  if (kinds > 1) return "mixed";
  return c.split_kv > 0 ? "split_kv" : (c.flash > 0 ? "flash" : "math");
}

}  // namespace

nlohmann::json run_executor_bench(const ExecutorBenchOptions& o,
                                  const std::function<void(const std::string&)>& log) {
  const ModelConfig& m = o.model;
  const std::uint32_t max_batch = *std::max_element(o.batches.begin(), o.batches.end());
  const std::uint32_t max_k = *std::max_element(o.ks.begin(), o.ks.end());
  const std::uint32_t max_prompt = o.header + max_k * o.fact + o.footer + o.query;

  GpuExecutorOptions eo;
  eo.model = m;
  eo.device = o.device;
  eo.dtype = o.dtype;
  eo.rope = o.rope;
  eo.seed = o.seed;
  eo.split_kv = o.split_kv;
  eo.cuda_graphs = o.cuda_graphs;
  eo.blas = o.blas;
  eo.programmatic_launch = o.programmatic_launch;
  const std::uint64_t block = FactPool::block_bytes(m, std::uint32_t(dtype_bytes(o.dtype)));
  const std::uint64_t blocks_per_fact = (o.fact + kBlockTokens - 1) / kBlockTokens;
  eo.pool_bytes =
      std::uint64_t(max_batch) * std::max<std::uint32_t>(max_k, 1) * blocks_per_fact * block;
  eo.reserved_pool_tokens = o.header + 2 * kBlockTokens;
  eo.decode_reserve_tokens = o.output + 1;
  eo.max_batch_tokens = 16384;
  eo.kv_cache_tokens =
      max_batch * (max_prompt + eo.decode_reserve_tokens) + eo.max_batch_tokens + o.header + 64;
  eo.rope_positions = std::int32_t(max_prompt + o.output + 64);
  log("building " + m.name + " (" + std::to_string(m.parameters() / 1000000) + "M parameters, " +
      dtype_name(o.dtype) + ") on " + o.device);
  GpuExecutor ex(eo);

  // Every request slot's facts, encoded once (w = 0) and resident for the whole run.
  std::vector<double> encode_ms;
  if (max_k > 0 && std::find(o.modes.begin(), o.modes.end(), "kv_inject") != o.modes.end()) {
    BatchPlan plan;
    auto flush = [&] {
      if (plan.encodes.empty()) return;
      encode_ms.push_back(double(ex.execute(plan).duration_ns) / 1e6);
      plan.clear();
    };
    for (std::uint32_t r = 0; r < max_batch; ++r) {
      for (std::uint32_t j = 0; j < max_k; ++j) {
        FactEncode e;
        e.fact = fact_id(r, j);
        e.tokens = o.fact;
        plan.encodes.push_back(e);
        if (plan.encodes.size() * o.fact >= eo.max_batch_tokens) flush();
      }
    }
    flush();
    log("encoded " + std::to_string(ex.pool().resident_facts()) + " facts, pool " +
        std::to_string(ex.pool().used_bytes() >> 20) + " MiB");
  }

  std::vector<Config> configs;
  for (const std::string& mode : o.modes) {
    for (std::uint32_t b : o.batches) {
      for (std::uint32_t k : o.ks) configs.push_back({mode, b, k});
    }
  }
  RequestId next_request = 1;
  nlohmann::json rows = nlohmann::json::array();
  for (const Config& c : configs) {
    const bool inject = c.mode == "kv_inject";
    std::vector<double> ttft, tpot, inject_ns;
    std::uint64_t injected = 0, computed = 0;
    double flops = 0;
    AttentionCounts ttft_calls, decode_calls;
    bool ttft_graph = false;
    std::uint32_t decode_graphs = 0;
    for (std::uint32_t rep = 0; rep < o.warmup + o.reps; ++rep) {
      BatchPlan plan;
      std::vector<RequestId> ids;
      flops = 0;
      for (std::uint32_t r = 0; r < c.batch; ++r) {
        PrefillItem p;
        p.request = next_request++;
        p.user = r;
        p.header_tokens = o.header;
        p.footer_tokens = o.footer;
        p.query_tokens = o.query;
        p.facts_begin = std::uint32_t(plan.prompt_facts.size());
        for (std::uint32_t j = 0; j < c.k; ++j) {
          PromptFact f;
          f.fact = fact_id(r, j);
          f.tokens = o.fact;
          f.position = o.header + j * o.fact;
          f.inject = inject;
          plan.prompt_facts.push_back(f);
        }
        p.facts_end = std::uint32_t(plan.prompt_facts.size());
        p.prompt_tokens = o.header + c.k * o.fact + o.footer + o.query;
        p.header_cached = inject;  // text: the whole composed prompt is prefilled
        p.computed_total = inject ? o.footer + o.query : p.prompt_tokens;
        p.computed_now = p.computed_total;
        p.present_tokens = 0;
        p.first_chunk = p.last_chunk = true;
        plan.prefills.push_back(p);
        ids.push_back(p.request);
        flops += prefill_flops(m, p.computed_total, p.prompt_tokens - p.computed_total);
      }
      const BatchResult first = ex.execute(plan);
      injected = ex.last_stats().injected_tokens;
      computed = ex.last_stats().computed_tokens;
      ttft_calls = ex.last_stats().attention;
      ttft_graph = ex.last_stats().graph_replays > 0;
      decode_graphs = 0;
      const bool measured = rep >= o.warmup;
      if (measured) {
        ttft.push_back(double(first.duration_ns) / 1e6);
        inject_ns.push_back(double(first.phases.inject_ns));
      }
      double decode_ms = 0;
      for (std::uint32_t step = 1; step < o.output; ++step) {
        BatchPlan d;
        for (std::size_t r = 0; r < ids.size(); ++r) {
          d.decodes.push_back(DecodeItem{ids[r], plan.prefills[r].prompt_tokens + step - 1});
        }
        if (step + 1 == o.output) d.released = ids;
        decode_ms += double(ex.execute(d).duration_ns) / 1e6;
        decode_calls = ex.last_stats().attention;
        decode_graphs += ex.last_stats().graph_replays > 0 ? 1 : 0;
      }
      if (o.output <= 1) {
        BatchPlan rel;
        rel.released = ids;
        ex.execute(rel);
      }
      if (measured && o.output > 1) tpot.push_back(decode_ms / (o.output - 1));
    }
    nlohmann::json row;
    row["mode"] = c.mode;
    row["batch"] = c.batch;
    row["k"] = c.k;
    row["ttft_ms"] = median(ttft);
    row["tpot_ms"] = median(tpot);
    const double total_s = (median(ttft) + median(tpot) * (o.output - 1)) / 1e3;
    row["tokens_per_s"] = total_s > 0 ? double(c.batch) * o.output / total_s : 0.0;
    if (inject) {
      const double bytes = 2.0 * double(injected) * double(m.kv_bytes_per_token()) /
                           double(m.dtype_bytes) * dtype_bytes(o.dtype);
      const double ns = median(inject_ns);
      row["inject_tbps"] = ns > 0 ? bytes / ns / 1e3 : 0.0;
      row["inject_ms"] = ns / 1e6;
      row["injected_tokens"] = injected;
    } else {
      row["tflops"] = flops / (median(ttft) * 1e-3) / 1e12;
    }
    row["ttft_attention"] = attention_kind(ttft_calls);
    row["decode_attention"] = attention_kind(decode_calls);
    row["ttft_cuda_graph"] = ttft_graph;  // the last repetition's TTFT step was a graph replay
    row["decode_cuda_graph_steps"] = decode_graphs;  // of its output - 1 decode steps
    row["prefill_tokens"] = computed;
    row["prefill_flops"] = flops;
    row["ttft_ms_reps"] = ttft;
    row["tpot_ms_reps"] = tpot;
    rows.push_back(row);
    char line[256];
    std::snprintf(line, sizeof line,
                  "%-9s batch %3u k %2u: ttft %9.3f ms  tpot %7.3f ms  (attention: %s, %s%s)",
                  c.mode.c_str(), c.batch, c.k, double(row["ttft_ms"]), double(row["tpot_ms"]),
                  attention_kind(ttft_calls).c_str(), attention_kind(decode_calls).c_str(),
                  ttft_graph ? "; TTFT step a CUDA graph" : "");
    log(line);
  }

  const GemmCounts& gc = ex.ops().gemm_counts();
  log("matrix products issued by the host (graph replays not counted): " + std::to_string(gc.blas) +
      " by libtorch (" + std::to_string(gc.blas_lt) + " of them on cuBLASLt)");
  nlohmann::json doc;
  doc["command"] = o.command;
  doc["machine"] = ex.ops().device_name();
  doc["libtorch"] = compat::torch_version();
  doc["model"] = {{"name", m.name},
                  {"layers", m.layers},
                  {"hidden", m.hidden},
                  {"heads", m.heads},
                  {"kv_heads", m.kv_heads},
                  {"head_dim", m.head_dim},
                  {"ffn", m.ffn},
                  {"vocab", m.vocab},
                  {"parameters", m.parameters()},
                  {"weights", "random(seed=" + std::to_string(o.seed) + ")"}};
  doc["settings"] = {
      {"device", o.device},
      {"dtype", dtype_name(o.dtype)},
      {"header", o.header},
      {"fact", o.fact},
      {"footer", o.footer},
      {"query", o.query},
      {"output", o.output},
      {"rope", o.rope == RopeMode::kPreRope ? "pre_rope" : "delta"},
      {"split_kv",
       {{"enabled", eo.split_kv.enabled},
        {"max_query_tokens", eo.split_kv.max_query_tokens},
        {"min_context_tokens", eo.split_kv.min_context_tokens},
        {"min_chunk_tiles", eo.split_kv.min_chunk_tiles},
        {"switch", "--split-kv on|off, --split-kv-min-tiles n"}}},
      {"cuda_graphs",
       {{"enabled", eo.cuda_graphs.enabled},
        {"max_tokens", eo.cuda_graphs.max_tokens},
        {"max_graphs", eo.cuda_graphs.max_graphs},
        {"key_bucket", eo.cuda_graphs.key_bucket},
        {"switch", "--cuda-graphs on|off"},
        {"note",
         "a step shape seen before is captured once (that step runs eagerly) and replayed "
         "after; with warmup >= 2 every measured step of a shape is a replay"}}},
      {"blas",
       {{"library", blas_library_name(eo.blas.library)},
        {"lt_max_rows", eo.blas.lt_max_rows},
        {"switch", "--blas cublas|cublaslt|cublaslt_few_rows"},
        {"note", "cublaslt_few_rows: products of at most lt_max_rows rows on cuBLASLt"}}},
      {"programmatic_launch",
       {{"enabled", eo.programmatic_launch},
        {"switch", "--pdl on|off"},
        {"note",
         "kv_append, split-KV attention and its combine, silu_mul and inject launched with "
         "programmatic stream serialization: each may start before the kernel before it ends"}}},
      {"gemm_counts", {{"libtorch", gc.blas}, {"libtorch_cublaslt", gc.blas_lt}}},
      {"cwe_window", 0},
      {"reps", o.reps},
      {"warmup", o.warmup},
      {"timing", o.device == "cuda" ? "CUDA events around each step (median of reps)"
                                    : "wall clock around each step (median of reps)"},
      {"ttft",
       "one step prefilling every request of the batch (arrived together); "
       "kv_inject: header cached, facts resident and injected, footer + "
       "query computed; text: the whole composed prompt computed"},
      {"tpot", "mean decode step of the batch over output - 1 steps"}};
  doc["fact_encode_ms"] = encode_ms;
  doc["rows"] = rows;
  return doc;
}

std::string executor_bench_table(const nlohmann::json& results) {
  std::string out = "mode       batch   k    ttft_ms   tpot_ms   tokens/s   TFLOP/s  inject TB/s\n";
  for (const auto& r : results["rows"]) {
    char line[200];
    std::snprintf(
        line, sizeof line, "%-9s %6u %3u %10.3f %9.3f %10.1f %9s %12s\n",
        r["mode"].get<std::string>().c_str(), r["batch"].get<unsigned>(), r["k"].get<unsigned>(),
        r["ttft_ms"].get<double>(), r["tpot_ms"].get<double>(), r["tokens_per_s"].get<double>(),
        r.contains("tflops") ? std::to_string(r["tflops"].get<double>()).substr(0, 7).c_str() : "-",
        r.contains("inject_tbps")
            ? std::to_string(r["inject_tbps"].get<double>()).substr(0, 6).c_str()
            : "-");
    out += line;
  }
  return out;
}

}  // namespace inferscale
