#include "plan/planner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "plan/probe_cache.h"
#include "policies/registry.h"
#include "sim/config/experiment.h"
#include "sim/cost.h"
#include "sim/runner.h"
#include "sim/trace_source.h"
#include "traces/error.h"
#include "traces/record_stream.h"
#include "traces/scaled_trace.h"
#include "traces/workload.h"
#include "traces/writer.h"

namespace inferscale::plan {

const char* to_string(Status s) {
  switch (s) {
    case Status::kOk:
      return "ok";
    case Status::kPruned:
      return "pruned";
    case Status::kInfeasible:
      return "infeasible";
    case Status::kOverMax:
      return "over_max";
  }
  return "?";
}

namespace {

/// Probe sizes and loads: the plan's load at `users` x `factor`, `replicas` replicas.
}  // namespace

std::uint64_t probe_requests(const PlanConfig& p, std::uint64_t users, double factor) {
  LoadConfig load = p.load;
  load.users = users;
  const double rate = load.sizing_rate_per_s() * factor;
  const double span_s = p.probe.warmup_s + p.probe.window_s + p.probe.cooldown_s;
  if (!p.load.replay.empty()) {  // the rows that arrive within the probe's span
    const double speedup = p.load.replay_speedup * p.load.peak_factor * factor;
    const auto end_ns = static_cast<std::int64_t>(span_s * 1e9 * speedup);
    const auto& t = p.load.replay_times_ns;
    return std::max<std::uint64_t>(
        1, std::uint64_t(std::upper_bound(t.begin(), t.end(), end_ns) - t.begin()));
  }
  return std::max<std::uint64_t>(1, std::uint64_t(std::ceil(rate * span_s)));
}

std::vector<std::string> probe_overrides(const PlanConfig& p, std::uint64_t users, double factor,
                                         std::uint32_t replicas) {
  LoadConfig load = p.load;
  load.users = users;
  const double rate = load.sizing_rate_per_s() * factor;
  const double speedup = p.load.replay_speedup * p.load.peak_factor * factor;
  const std::uint64_t requests = probe_requests(p, users, factor);
  char rate_text[64];
  std::snprintf(rate_text, sizeof rate_text, "%.17g", rate);
  const std::vector<std::string> common{
      std::string("store.warm=") + (p.probe.warm_store ? "true" : "false"),
      "output.requests_csv=false", "output.timeline=false", "replicas=" + std::to_string(replicas)};
  if (p.load.source) {  // LoCoMo or a trace file, re-sized to `users` and re-timed to `rate`
    const YAML::Node seed_node = p.base["seed"];
    ScaleOptions o;
    o.users = users;
    o.requests = requests;
    o.rate_per_s = rate;
    o.cv = p.load.arrival == "gamma" ? p.load.cv : 1.0;
    o.seed = seed_node && seed_node.IsScalar() ? seed_node.as<std::uint64_t>() : 1;
    char id[256];
    std::snprintf(id, sizeof id, "%s %llu %llu %.17g %.17g %llu", p.load.source->digest.c_str(),
                  static_cast<unsigned long long>(o.users),
                  static_cast<unsigned long long>(o.requests), o.rate_per_s, o.cv,
                  static_cast<unsigned long long>(o.seed));
    const auto dir = std::filesystem::path(p.out_dir) / p.name / ".traces";
    const auto path = dir / ("scaled-" + probe_hash(id) + ".jsonl");
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      TraceFolder folder(dir);  // removed again, with <out>/<plan>/ if made here, on a failure
      TraceWriter w(path.string());
      try {
        write_scaled_trace(*p.load.source, o, w);
      } catch (const InputError& e) {
        throw InputError(p.load_where, std::string(e.what()) + " (load.users)");
      }
      w.close();
      folder.keep();
    }
    std::vector<std::string> sets{"trace=" + path.string()};
    sets.insert(sets.end(), common.begin(), common.end());
    return sets;
  }
  char cv_text[64];
  std::snprintf(cv_text, sizeof cv_text, "%.17g", p.load.cv);
  std::vector<std::string> sets{
      "trace.generate.users=" + std::to_string(users),
      std::string("trace.generate.rate=") + rate_text,
      "trace.generate.requests=" + std::to_string(requests),
      "trace.generate.arrival=" + p.load.arrival,
      "trace.generate.write_trace=false",
      std::string("store.warm=") + (p.probe.warm_store ? "true" : "false"),
      "output.requests_csv=false",
      "output.timeline=false",
      "replicas=" + std::to_string(replicas)};
  if (p.load.arrival == "gamma") sets.push_back(std::string("trace.generate.cv=") + cv_text);
  if (!p.load.replay.empty()) {
    char speed_text[64];
    std::snprintf(speed_text, sizeof speed_text, "%.17g", speedup);
    sets.push_back("trace.generate.replay=" + p.load.replay);
    sets.push_back(std::string("trace.generate.replay_speedup=") + speed_text);
  }
  return sets;
}

namespace {

/// The candidate's run, resolved with the probe's sets (InputError when it cannot run).
RunConfig resolve(const PlanConfig& p, const Candidate& c, const std::vector<std::string>& extra) {
  std::vector<std::string> sets = c.sets;
  sets.insert(sets.end(), extra.begin(), extra.end());
  const ExperimentConfig exp = load_experiment(p.base, p.base_file, sets);
  for (const auto& r : exp.runs) {
    if (r.name == c.run) return r;
  }
  throw InputError(p.base_where, "no run named '" + c.run + "'");
}

bool offline_policy(const RunConfig& run) {
  const auto offline = [](const TierConfig& t) {
    const EvictionInfo* info = PolicyRegistry::find_eviction(t.eviction);
    return t.enabled && info != nullptr && info->offline;
  };
  return run.serving.mode == ServingMode::kKvInject &&
         (offline(run.store.gpu) || offline(run.store.host));
}

/// The trace options as they resolve, one `key=value` each, for the cache key.
std::string trace_options_text(const RunConfig& run) {
  std::string text;
  const YamlView& v = run.trace.options;
  for (const auto& k : v.keys()) {
    YAML::Emitter e;
    e << YAML::Flow << v.node(k);
    text += k + "=" + e.c_str() + ";";
  }
  return text;
}

/// Replicas below which the load cannot be carried at the roofline: every request's prompt
/// and output tokens through the model at the GPU's peak x mfu, and each decode step's weight
/// read (at most max_seqs sequences share it) at the HBM rate x mbu.
std::uint32_t analytic_lower_bound(const RunConfig& run, double rate_per_s,
                                   const SourceTrace* src) {
  const YamlView& o = run.trace.options;
  const double tpw = o.number("tokens_per_word", 1.3, 1e-3, 100);
  double query = o.number("query_words", 10.2, 1, 1e6) * tpw;
  const double fact = o.number("fact_words", 14.8, 1, 1e6) * tpw;
  double output = double(o.integer("output_tokens", 50, 1, 1 << 24));
  const double k = double(std::min<std::int64_t>(run.serving.k, o.integer("k", 50, 0, 1 << 16)));
  double facts_tokens = k * fact;
  if (src != nullptr) {  // the source trace's own means; at most serving.k facts are inlined
    query = src->mean_query_tokens;
    output = src->mean_output_tokens;
    facts_tokens =
        src->mean_fact_tokens_per_request *
        std::min(1.0, double(run.serving.k) / std::max(1.0, src->mean_facts_per_request));
  }
  double prompt = query + run.serving.footer_tokens;
  if (run.serving.mode == ServingMode::kText) prompt += facts_tokens;
  if (!run.serving.header_cache) prompt += run.serving.header_tokens;
  const double flops = 2.0 * double(run.model.active_parameters()) * (prompt + output);
  const double peak = run.gpu.bf16_tflops * 1e12 * run.gpu.mfu * double(run.tp);
  const double weights_read =
      double(run.model.weight_bytes()) / (run.gpu.hbm_gbps * 1e9 * run.gpu.mbu * double(run.tp));
  const double per_request_s =
      flops / peak + output * weights_read / double(run.scheduler.max_seqs);
  const double replicas = rate_per_s * per_request_s;
  return static_cast<std::uint32_t>(std::max(1.0, std::ceil(replicas - 1e-9)));
}

struct Search {
  std::size_t cand = 0;
  std::map<std::uint32_t, bool> seen;
  std::uint32_t lo = 0, hi = 0;  // largest failing size (min - 1: none); smallest passing (0)
  bool below_checked = false;
  bool headroom = false;
  double h_lo = 1, h_hi = 2;  // the headroom's bracket: passed, failed (or the ceiling)
  bool h_failed = false;      // h_hi was probed and failed
  std::uint32_t h_done = 0;
  std::optional<ProbeSpec> pending;
  CandidateResult result;
  bool done = false;
};

/// The objective at `replicas` (cost and GPUs grow with replicas: a lower size bounds it).
double score_of(const PlanConfig& p, const Candidate& c, std::uint32_t replicas) {
  const FleetCost cost = fleet_cost(*c.priced, replicas);
  return p.objective == Objective::kCheapest ? cost.per_hour : double(cost.gpus);
}

}  // namespace

double candidate_cost_per_hour(const Candidate& c, std::uint32_t replicas) {
  return fleet_cost(*c.priced, replicas).per_hour;
}

double objective_score(const PlanConfig& plan, const CandidateResult& r) {
  switch (plan.objective) {
    case Objective::kCheapest:
      return r.cost_per_hour;
    case Objective::kFewestGpus:
      return double(r.gpus);
    case Objective::kUsersPerGpu:
      return -r.users_per_gpu_capacity;
  }
  return 0;
}

ProbeTask make_probe_task(const PlanConfig& plan, const Candidate& c, std::uint64_t users,
                          const ProbeSpec& spec) {
  ProbeTask t;
  t.spec = spec;
  t.run = resolve(plan, c, probe_overrides(plan, users, spec.load_factor, spec.replicas));
  const bool warm = t.run.store.warm && t.run.serving.mode == ServingMode::kKvInject;
  t.open = streamed_trace(t.run, warm);
  if (!t.open) {
    const std::string path = materialize_trace(
        t.run, (std::filesystem::path(plan.out_dir) / plan.name / ".traces").string());
    t.open = [path, fast = t.run.fast_paths] { return open_trace(path, fast); };
  }
  t.warmup_ns = seconds_to_ns(plan.probe.warmup_s);
  t.window_end_ns = seconds_to_ns(plan.probe.warmup_s + plan.probe.window_s);
  t.max_window_requests =
      plan.load.source
          ? probe_requests(plan, users, spec.load_factor)
          : static_cast<std::uint64_t>(t.run.trace.options.integer("requests", 1, 0, INT64_MAX));
  t.slo = plan.slo;
  if (t.run.serving.mode == ServingMode::kKvInject && c.kv_bytes_per_token_per_gpu > 0) {
    t.store_tokens = double(spec.replicas) * double(c.store_bytes_per_gpu) /
                     double(c.kv_bytes_per_token_per_gpu);
    const YamlView& o = t.run.trace.options;
    t.fact_tokens = plan.load.source ? plan.load.source->mean_fact_tokens
                                     : o.number("fact_words", 14.8, 1, 1e6) *
                                           o.number("tokens_per_word", 1.3, 1e-3, 100);
  }
  t.early_stop = plan.probe.early_stop;
  nlohmann::json cfg = nlohmann::json::parse(summary_json(t.run, RunSummary{}))["config"];
  cfg.erase("experiment");
  cfg.erase("run");
  // Text mode keeps no fact store: its settings change nothing, so such probes share a key.
  if (t.run.serving.mode == ServingMode::kText) cfg.erase("store");
  std::string key =
      "inferscale plan probe v2\nresults_version: " + std::to_string(plan.results_version) + "\n" +
      cfg.dump() + "\ntrace: " + trace_options_text(t.run) +
      "\nwindow: " + std::to_string(t.warmup_ns) + " " + std::to_string(t.window_end_ns) +
      "\nearly_stop: " + (t.early_stop ? "1" : "0") + "\nslo:";
  for (const auto& s : plan.slo) {
    char b[96];
    std::snprintf(b, sizeof b, " %s<=%.17g@%.17g", s.metric.c_str(), s.max_ms, s.share);
    key += b;
  }
  t.key_text = key;
  t.key = probe_hash(key);
  t.run_name = c.run;
  t.sets = c.sets;
  t.users = users;
  t.store_bytes_per_gpu = c.store_bytes_per_gpu;
  t.kv_bytes_per_token_per_gpu = c.kv_bytes_per_token_per_gpu;
  t.label = c.label;
  return t;
}

PlanOutcome run_plan(const PlanConfig& plan, const PlanOptions& opts, ProbeRunner& runner,
                     const ProbeCache& cache) {
  PlanOutcome out;
  const std::uint64_t users = opts.users.value_or(plan.load.users);
  // Candidates: the base experiment's runs x every combination of the search values.
  const ExperimentConfig base = load_experiment(plan.base, plan.base_file, {});
  std::size_t combos = 1;
  for (const auto& a : plan.axes) combos *= a.values.size();
  for (const auto& run : base.runs) {
    for (std::size_t i = 0; i < combos; ++i) {
      Candidate c;
      c.index = out.candidates.size();
      c.run = run.name;
      c.label = base.runs.size() == 1 && run.name == "default" ? "" : run.name;
      std::size_t rest = i;
      std::vector<std::size_t> pick(plan.axes.size());
      for (std::size_t a = plan.axes.size(); a-- > 0;) {
        pick[a] = rest % plan.axes[a].values.size();
        rest /= plan.axes[a].values.size();
      }
      for (std::size_t a = 0; a < plan.axes.size(); ++a) {
        const auto& v = plan.axes[a].values[pick[a]];
        c.values.push_back(v);
        c.sets.push_back(plan.axes[a].key + "=" + v);
        c.label += (c.label.empty() ? "" : " ") + plan.axes[a].key + "=" + v;
      }
      out.candidates.push_back(c);
    }
  }
  out.results.resize(out.candidates.size());
  const double rate = [&] {
    LoadConfig l = plan.load;
    l.users = users;
    return l.sizing_rate_per_s();
  }();
  // Resolve each candidate once (one replica): what it costs, whether it runs, its bound.
  for (auto& c : out.candidates) {
    try {
      const RunConfig run = resolve(plan, c, probe_overrides(plan, users, 1.0, 1));
      ExperimentConfig one;
      one.name = base.name;
      one.file = plan.base_file;
      one.runs = {run};
      validate_experiment(one);
      if (offline_policy(run)) {
        throw InputError("", "an offline policy (it reads the future) cannot be planned");
      }
      c.gpu = run.gpu.name;
      c.mode = to_string(run.serving.mode);
      c.tp = run.tp;
      auto priced = std::make_shared<RunConfig>(run);
      const auto price = plan.prices.find(run.gpu.name);
      if (price != plan.prices.end()) priced->prices.gpu_per_hour = price->second;
      c.price_per_gpu_hour = priced->prices.gpu_per_hour;
      c.priced = std::move(priced);
      c.store_bytes_per_gpu =
          run.serving.mode == ServingMode::kKvInject ? run.store.gpu.capacity_bytes : 0;
      c.host_bytes_per_replica =
          run.serving.mode == ServingMode::kKvInject && run.store.host.enabled
              ? run.store.host.capacity_bytes
              : 0;
      c.kv_bytes_per_token_per_gpu = run.kv_bytes_per_token_per_gpu();
      c.lower_bound = std::clamp(analytic_lower_bound(run, rate, plan.load.source.get()),
                                 plan.min_replicas, plan.max_replicas);
      if (plan.objective == Objective::kCheapest && c.price_per_gpu_hour <= 0) {
        throw InputError(plan.prices_where, "no price for GPU '" + run.gpu.name +
                                                "': add price_per_hour to its preset or "
                                                "prices: {" +
                                                run.gpu.name + ": USD} to the plan");
      }
      if (out.population_fact_tokens == 0 && plan.load.source) {
        out.population_fact_tokens = double(users) * plan.load.source->mean_facts_per_user *
                                     plan.load.source->mean_fact_tokens;
      } else if (out.population_fact_tokens == 0) {
        const YamlView& o = run.trace.options;
        out.population_fact_tokens = double(users) * o.number("facts_per_user", 127, 1, 1e9) *
                                     o.number("fact_words", 14.8, 1, 1e6) *
                                     o.number("tokens_per_word", 1.3, 1e-3, 100);
      }
    } catch (const InputError& e) {
      if (e.message().rfind("no price for GPU", 0) == 0) throw;
      c.infeasible = e.message();
      out.results[c.index].status = Status::kInfeasible;
      out.results[c.index].note = e.message();
    }
  }

  // Searched in order of the best they could be, a fixed number side by side.
  std::vector<std::size_t> order;
  for (const auto& c : out.candidates) {
    if (c.infeasible.empty()) order.push_back(c.index);
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return score_of(plan, out.candidates[a], out.candidates[a].lower_bound) <
           score_of(plan, out.candidates[b], out.candidates[b].lower_bound);
  });
  std::optional<double> best;  // the best score of a finished candidate
  const bool can_prune = plan.prune && plan.objective != Objective::kUsersPerGpu;
  std::unordered_map<std::string, ProbeResult> memo;  // probes done in this plan, by key
  std::mutex store_mutex;
  std::size_t next_in_order = 0;
  std::vector<Search> active;

  auto finish = [&](Search& s, Status status, const std::string& note) {
    s.done = true;
    auto& r = s.result;
    r.status = status;
    r.note = note;
    const Candidate& c = out.candidates[s.cand];
    if (status == Status::kOk) {
      const FleetCost cost = fleet_cost(*c.priced, s.hi);
      r.replicas = s.hi;
      r.gpus = static_cast<std::uint32_t>(cost.gpus);
      r.cost_per_hour = cost.per_hour;
      r.headroom_lower = s.h_lo;
      r.headroom_upper = s.h_failed ? s.h_hi : 0.0;
      r.users_per_gpu = double(users) / double(r.gpus);
      r.users_per_gpu_capacity = double(users) * r.headroom_lower / double(r.gpus);
      for (const auto& [size, pass] : s.seen) {
        if ((size > s.hi && !pass) || (size < s.hi && pass)) r.non_monotone = true;
      }
      if (!r.at_answer.turned_over) {
        r.note = "the warm-up did not fill the GPU store once: lengthen probe.warmup_s";
      }
      const double sc = objective_score(plan, r);
      if (!best || sc < *best) best = sc;
    }
    out.results[s.cand] = r;
  };

  // The next probe of a search, or none when it is done.
  auto next_spec = [&](Search& s) -> std::optional<ProbeSpec> {
    const Candidate& c = out.candidates[s.cand];
    if (!s.headroom) {
      std::optional<std::uint32_t> size;
      if (s.hi == 0) {
        if (s.seen.empty()) {
          size = c.lower_bound;
        } else if (s.lo >= plan.max_replicas) {
          finish(s, Status::kOverMax,
                 "fails at replicas.max = " + std::to_string(plan.max_replicas));
          return std::nullopt;
        } else {
          size = std::min(plan.max_replicas, std::max(s.lo + 1, s.lo * 2));
        }
      } else if (s.hi - s.lo > 1) {
        if (!s.below_checked) {
          s.below_checked = true;
          size = s.hi - 1;
        } else {
          size = s.lo + (s.hi - s.lo) / 2;
        }
      }
      if (size) {
        if (can_prune && best && score_of(plan, c, s.lo + 1) > *best) {
          finish(s, Status::kPruned,
                 "cannot beat the best found (at least " + std::to_string(s.lo + 1) + " replicas)");
          return std::nullopt;
        }
        return ProbeSpec{s.cand, *size, 1.0};
      }
      s.headroom = true;  // sized: hi is the answer, hi - 1 failed (or is below replicas.min)
      s.h_hi = s.hi > 1 ? double(s.hi) / double(s.hi - 1) : 2.0;
    }
    if (s.h_done < plan.headroom_steps) {
      ++s.h_done;
      return ProbeSpec{s.cand, s.hi, 0.5 * (s.h_lo + s.h_hi)};
    }
    finish(s, Status::kOk, "");
    return std::nullopt;
  };

  auto feed = [&](Search& s, const ProbeSpec& spec, const ProbeResult& r) {
    ++s.result.probes;
    if (spec.load_factor == 1.0) {
      s.seen[spec.replicas] = r.pass;
      if (r.pass) {
        s.hi = s.hi == 0 ? spec.replicas : std::min(s.hi, spec.replicas);
        if (s.hi == spec.replicas) s.result.at_answer = r;
      } else {
        s.lo = std::max(s.lo, spec.replicas);
      }
    } else if (r.pass) {
      s.h_lo = spec.load_factor;
    } else {
      s.h_hi = spec.load_factor;
      s.h_failed = true;
    }
  };

  while (next_in_order < order.size() || !active.empty()) {
    while (active.size() < plan.batch && next_in_order < order.size()) {
      Search s;
      s.cand = order[next_in_order++];
      s.lo = plan.min_replicas - 1;
      const Candidate& c = out.candidates[s.cand];
      if (can_prune && best && score_of(plan, c, c.lower_bound) > *best) {
        finish(s, Status::kPruned,
               "cannot beat the best found (analytic bound " + std::to_string(c.lower_bound) +
                   " replicas)");
        continue;
      }
      active.push_back(std::move(s));
    }
    // One probe per active search; resolved here, run by the workers.
    std::vector<std::unique_ptr<ProbeTask>> tasks;
    std::vector<std::size_t> owner;  // active index per task
    for (std::size_t i = 0; i < active.size(); ++i) {
      const auto spec = next_spec(active[i]);
      if (!spec) continue;
      auto t = std::make_unique<ProbeTask>(
          make_probe_task(plan, out.candidates[spec->candidate], users, *spec));
      tasks.push_back(std::move(t));
      owner.push_back(i);
    }
    // Known results: this plan's earlier probes, then (with --resume) the cache.
    std::vector<std::optional<ProbeResult>> known(tasks.size());
    std::vector<const ProbeTask*> to_run;
    std::unordered_map<std::string, std::size_t> first_of;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      if (auto m = memo.find(tasks[i]->key); m != memo.end()) {
        known[i] = m->second;
        known[i]->cached = true;
      } else if (auto f = opts.resume ? cache.find(*tasks[i]) : std::nullopt) {
        known[i] = *f;
      } else if (first_of.emplace(tasks[i]->key, i).second) {
        to_run.push_back(tasks[i].get());
      }
    }
    const auto ran = runner.run(to_run, [&](const ProbeTask& t, const ProbeResult& r) {
      std::lock_guard lock(store_mutex);
      cache.store(t, r);
    });
    std::unordered_map<std::string, const ProbeResult*> ran_by_key;
    for (std::size_t i = 0; i < to_run.size(); ++i) {
      ran_by_key[to_run[i]->key] = &ran[i];
      ++out.probes_run;
      out.probe_wall_s += ran[i].wall_s;
      if (ran[i].stopped_early) ++out.probes_stopped_early;
    }
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      ProbeResult r;
      if (known[i]) {
        r = *known[i];
        ++out.probes_cached;
      } else {
        r = *ran_by_key.at(tasks[i]->key);
        if (first_of.at(tasks[i]->key) != i) {
          r.cached = true;
          ++out.probes_cached;
        }
      }
      memo.emplace(tasks[i]->key, r);
      out.probes.push_back({tasks[i]->spec, r, tasks[i]->key});
      feed(active[owner[i]], tasks[i]->spec, r);
    }
    active.erase(
        std::remove_if(active.begin(), active.end(), [](const Search& s) { return s.done; }),
        active.end());
    if (!opts.quiet) {
      std::fprintf(stderr, "\rplan %s: %zu/%zu candidates, %llu probes run, %llu reused ",
                   plan.name.c_str(), next_in_order - active.size(), order.size(),
                   static_cast<unsigned long long>(out.probes_run),
                   static_cast<unsigned long long>(out.probes_cached));
    }
  }
  if (!opts.quiet) std::fprintf(stderr, "\n");
  return out;
}

}  // namespace inferscale::plan
