#include "plan/plan_config.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>

#include "sim/config/experiment.h"
#include "sim/config/yaml_view.h"
#include "sim/runner.h"
#include "sim/trace_source.h"
#include "traces/arrival_replay.h"
#include "traces/error.h"
#include "traces/locomo.h"
#include "traces/scaled_trace.h"

namespace inferscale::plan {

namespace fs = std::filesystem;

const char* to_string(Objective o) {
  switch (o) {
    case Objective::kCheapest:
      return "cheapest";
    case Objective::kFewestGpus:
      return "fewest_gpus";
    case Objective::kUsersPerGpu:
      return "most_users_per_gpu";
  }
  return "?";
}

double LoadConfig::mean_rate_per_s() const {
  if (!replay.empty()) {
    const double span_s = double(replay_times_ns.back()) / 1e9;
    return span_s > 0 ? double(replay_times_ns.size()) / span_s * replay_speedup : 0.0;
  }
  if (rate_per_s > 0) return rate_per_s;
  return double(users) * requests_per_user_per_hour / 3600.0;
}

double LoadConfig::sizing_rate_per_s() const {
  double diurnal_peak = 1;
  if (!diurnal.empty()) {
    const double mean =
        std::accumulate(diurnal.begin(), diurnal.end(), 0.0) / double(diurnal.size());
    diurnal_peak = *std::max_element(diurnal.begin(), diurnal.end()) / mean;
  }
  return mean_rate_per_s() * peak_factor * diurnal_peak;
}

namespace {

/// A YAML value as one line of flow YAML (the text a `--set key=value` takes).
std::string flow(const YAML::Node& n) {
  if (n.IsScalar()) return n.Scalar();
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

LoadConfig parse_load(const YamlView& v, const std::string& file) {
  if (!v.has("load")) v.fail("", "missing key 'load' (users and requests_per_user_per_hour)");
  const auto l = v.child("load");
  l.reject_unknown({"users", "requests_per_user_per_hour", "rate_per_s", "peak_factor", "arrival",
                    "cv", "diurnal", "replay", "replay_speedup", "trace", "trace_file"});
  LoadConfig c;
  c.trace = l.choice("trace", "generate", {"generate", "locomo", "file"});
  if (c.trace == "file") {
    if (!l.has("trace_file")) l.fail("trace", "'trace: file' needs 'trace_file: TRACE.jsonl'");
    c.trace_file = l.text("trace_file", "");
    if (!path_exists(c.trace_file, l.where("trace_file"))) {
      const auto beside = (fs::path(file).parent_path() / c.trace_file).string();
      if (!path_exists(beside, l.where("trace_file"))) {
        l.fail("trace_file", "trace file '" + c.trace_file + "' not found");
      }
      c.trace_file = beside;
    }
    try {
      c.source = std::make_shared<const SourceTrace>(read_source_trace(c.trace_file));
    } catch (const InputError& e) {
      throw InputError(l.where("trace_file"), std::string(e.what()) + " (at " + e.where() + ")");
    }
  } else if (l.has("trace_file")) {
    l.fail("trace_file", "trace_file applies to 'trace: file'");
  }
  if (c.trace != "generate" && l.has("replay")) {
    l.fail("replay", "a replay draws on a generated trace: drop it or use 'trace: generate'");
  }
  c.users = static_cast<std::uint64_t>(l.integer("users", 1000, 1, std::int64_t(1) << 40));
  c.requests_per_user_per_hour = l.number("requests_per_user_per_hour", 0, 0, 1e9);
  c.rate_per_s = l.number("rate_per_s", 0, 0, 1e12);
  if (l.has("replay")) {
    c.replay = l.text("replay", "");
    if (!path_exists(c.replay, l.where("replay"))) {
      const auto beside = (fs::path(file).parent_path() / c.replay).string();
      if (!path_exists(beside, l.where("replay"))) {
        l.fail("replay", "arrival trace '" + c.replay + "' not found");
      }
      c.replay = beside;
    }
    try {
      for (const auto& r : read_arrival_csv(c.replay)) c.replay_times_ns.push_back(r.time_ns);
    } catch (const InputError& e) {
      throw InputError(l.where("replay"), e.what());
    }
    c.replay_speedup = l.number("replay_speedup", 1, 1e-9, 1e9);
    if (c.requests_per_user_per_hour > 0 || c.rate_per_s > 0 || l.has("diurnal") ||
        l.has("arrival")) {
      l.fail("replay",
             "a replay sets the arrivals: drop requests_per_user_per_hour, rate_per_s, arrival "
             "and diurnal");
    }
  } else if ((c.requests_per_user_per_hour > 0) == (c.rate_per_s > 0)) {
    l.fail("", "give exactly one of requests_per_user_per_hour and rate_per_s (positive)");
  }
  c.peak_factor = l.number("peak_factor", 1, 1e-6, 1e6);
  c.arrival = l.choice("arrival", "poisson", {"poisson", "gamma"});
  c.cv = l.number("cv", 1, 0, 100);
  if (l.has("diurnal")) {
    if (!l.is_sequence("diurnal")) l.fail("diurnal", "expected a list of 24 hourly weights");
    for (const auto& n : l.node("diurnal")) {
      double w = -1;
      try {
        w = n.as<double>();
      } catch (const YAML::Exception&) {
      }
      if (!(w >= 0)) l.fail("diurnal", "expected non-negative numbers, got '" + flow(n) + "'");
      c.diurnal.push_back(w);
    }
    if (c.diurnal.size() != 24) {
      l.fail("diurnal", "expected 24 hourly weights, got " + std::to_string(c.diurnal.size()));
    }
    if (*std::max_element(c.diurnal.begin(), c.diurnal.end()) <= 0) {
      l.fail("diurnal", "expected a positive weight in some hour");
    }
  }
  return c;
}

std::vector<SloTarget> parse_slo(const YamlView& v) {
  if (!v.has("slo")) v.fail("", "missing key 'slo' (e.g. {ttft_ms: {p99: 500}})");
  const auto s = v.child("slo");
  const std::vector<std::string> metrics{"ttft_ms", "tpot_ms", "e2e_ms"};
  std::vector<SloTarget> out;
  for (const auto& key : s.keys()) {
    if (std::find(metrics.begin(), metrics.end(), key) == metrics.end()) {
      s.fail(key, "unknown SLO metric '" + key + "' (expected one of: ttft_ms, tpot_ms, e2e_ms)");
    }
    if (!s.is_map(key)) s.fail(key, "expected a map of percentiles, e.g. {p99: 500}");
    const auto m = s.child(key);
    for (const auto& pk : m.keys()) {
      double pct = -1;
      if (pk.size() > 1 && pk[0] == 'p') {
        try {
          std::size_t used = 0;
          pct = std::stod(pk.substr(1), &used);
          if (used != pk.size() - 1) pct = -1;
        } catch (const std::exception&) {
        }
      }
      if (!(pct > 0 && pct < 100)) {
        m.fail(pk, "unknown percentile '" + pk + "' (expected p50, p90, p99, p99.9, ...)");
      }
      SloTarget t;
      t.metric = key.substr(0, key.size() - 3);
      t.share = pct / 100.0;
      t.max_ms = m.number(pk, 0, 1e-9, 1e12);
      t.label = t.metric + "_" + pk + "_ms";
      out.push_back(t);
    }
  }
  if (out.empty()) s.fail("", "expected at least one SLO (e.g. ttft_ms: {p99: 500})");
  return out;
}

/// Keys the planner sets itself; a search over them would be silently overridden.
bool planner_owned(const std::string& key) {
  for (const char* k : {"replicas", "trace", "runs", "experiment", "output"}) {
    if (key == k || key.rfind(std::string(k) + ".", 0) == 0) return true;
  }
  return false;
}

/// `{from: 10, to: 50, step: 10, unit: "%"}`: from, from + step, ... up to `to` (within
/// rounding), each with the unit appended.
void range_values(const YamlView& r, SearchAxis& a) {
  r.reject_unknown({"from", "to", "step", "unit"});
  const double from = r.number("from", 0, -1e15, 1e15);
  const double to = r.number("to", from, -1e15, 1e15);
  const double step = r.number("step", 1, 1e-12, 1e15);
  const std::string unit = r.text("unit", "");
  if (to < from) r.fail("to", "expected to >= from");
  const double n = std::floor((to - from) / step + 1e-9);
  if (n >= 10000) r.fail("step", "more than 10,000 values");
  for (double i = 0; i <= n; ++i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.12g", from + i * step);
    a.values.push_back(buf + unit);
    a.value_where.push_back(a.where);
  }
}

std::vector<SearchAxis> parse_search(const YamlView& v, const std::string& file) {
  if (!v.has("search")) {
    v.fail("",
           "missing key 'search': the keys to search and their values (e.g. gpu: [h100, h200])");
  }
  if (!v.is_map("search")) v.fail("search", "expected a map of key paths to lists of values");
  const YAML::Node search = v.node("search");
  if (search.size() == 0) v.fail("search", "empty search space: give at least one key and values");
  std::vector<SearchAxis> axes;
  for (const auto& kv : search) {
    SearchAxis a;
    a.key = kv.first.Scalar();
    a.where = yaml_position(kv.first, file) + ": search." + a.key;
    if (planner_owned(a.key)) {
      throw InputError(a.where, "'" + a.key +
                                    "' is set by the planner (replicas are searched; the load "
                                    "comes from 'load'); remove it from the search space");
    }
    if (kv.second.IsSequence()) {
      if (kv.second.size() == 0) {
        throw InputError(a.where, "empty search space: no values for '" + a.key + "'");
      }
      for (const auto& n : kv.second) {
        a.values.push_back(flow(n));
        a.value_where.push_back(yaml_position(n, file) + ": search." + a.key);
      }
    } else if (kv.second.IsMap() && kv.second["from"]) {
      range_values(YamlView({{kv.second, file}}, "search." + a.key), a);
    } else {
      a.values.push_back(flow(kv.second));
      a.value_where.push_back(a.where);
    }
    for (const auto& other : axes) {
      if (other.key == a.key) throw InputError(a.where, "duplicate search key '" + a.key + "'");
    }
    axes.push_back(a);
  }
  return axes;
}

/// Each value of each key, applied alone to the base: an unknown key, a value of the wrong
/// kind or an unknown name is an error of the plan, at the value's position. A value that
/// only fails in some combinations (a store that does not fit one GPU) is left to the search,
/// which reports such candidates as infeasible.
void check_axes(const PlanConfig& p) {
  for (const auto& a : p.axes) {
    for (std::size_t i = 0; i < a.values.size(); ++i) {
      try {
        const auto exp = load_experiment(p.base, p.base_file, {a.key + "=" + a.values[i]});
        validate_experiment(exp);
      } catch (const InputError& e) {
        const std::string& m = e.message();
        const bool combination = m.find("does not fit") != std::string::npos ||
                                 m.find("not divisible") != std::string::npos ||
                                 m.find("must divide") != std::string::npos ||
                                 m.find("trace file") != std::string::npos;
        if (!combination) {
          throw InputError(a.value_where[i], m + " (applied to the base experiment as " + a.key +
                                                 "=" + a.values[i] + ")");
        }
      }
    }
  }
}

/// LoCoMo imported once per speaker, all their questions, their facts known from the start,
/// with the base's `trace.locomo` options where it has them (data, k, tokens_per_word, ...).
std::shared_ptr<const SourceTrace> locomo_source(const PlanConfig& p) {
  YAML::Node base = YAML::Clone(p.base);
  YAML::Node opts(YAML::NodeType::Map);
  if (base["trace"] && base["trace"].IsMap() && base["trace"]["locomo"]) {
    opts = YAML::Clone(base["trace"]["locomo"]);
  }
  const std::string data = opts["data"] ? opts["data"].as<std::string>() : std::string();
  const std::size_t conversations =
      load_locomo(find_locomo(locomo_search(data), p.load_where)).conversations.size();
  for (const char* k : {"concurrency", "think_time_s", "cv", "questions_per_user"}) opts.remove(k);
  opts["users"] = 2 * conversations;  // user i: conversation i % C, speaker (i / C) % 2
  opts["initial_memory"] = true;
  opts["arrival"] = "poisson";
  opts["rate"] = 1;
  opts["text"] = false;
  opts["history_span_s"] = 0;
  opts["start_s"] = 0;
  YAML::Node trace(YAML::NodeType::Map);
  trace["locomo"] = opts;
  base["trace"] = trace;
  const ExperimentConfig exp = load_experiment(base, p.base_file, {});
  const auto dir =
      fs::temp_directory_path() / ("inferscale_locomo_source_" + std::to_string(::getpid()));
  const std::string path = materialize_trace(exp.runs.at(0), dir.string());
  auto source = std::make_shared<SourceTrace>(read_source_trace(path));
  source->path = "LoCoMo";
  std::error_code ec;
  fs::remove_all(dir, ec);
  return source;
}

}  // namespace

PlanConfig load_plan(const std::string& file) {
  PlanConfig p;
  p.file = file;
  p.results_version = kResultsVersion;
  const YAML::Node root = load_yaml_file(file);
  if (!root.IsMap()) throw InputError(yaml_position(root, file), "expected a map of keys");
  const YamlView v({{root, file}}, "");
  v.reject_unknown({"plan", "description", "base", "load", "slo", "search", "replicas", "objective",
                    "prices", "probe", "options", "output"});
  p.name = v.text("plan", fs::path(file).stem().string());
  if (!v.has("base")) v.fail("", "missing key 'base': an experiment file or an inline map");
  p.base_where = v.where("base");
  if (v.is_map("base")) {
    p.base = root["base"];
    p.base_file = file;
  } else {
    std::string path = v.text("base", "");
    if (!path_exists(path, p.base_where)) {
      const auto beside = (fs::path(file).parent_path() / path).string();
      if (!path_exists(beside, p.base_where)) {
        v.fail("base", "experiment file '" + path + "' not found");
      }
      path = beside;
    }
    p.base = load_yaml_file(path);
    p.base_file = path;
    if (!p.base.IsMap()) throw InputError(yaml_position(p.base, path), "expected a map of keys");
  }
  p.load_where = v.where("load");
  p.load = parse_load(v, file);
  const YAML::Node base_trace = p.base["trace"];
  const bool base_generates = base_trace && base_trace.IsMap() && base_trace["generate"];
  if (!base_generates && !root["load"]["trace"]) {
    // Sizing a LoCoMo or file base on generated users unasked would be a silent substitution.
    throw InputError(p.load_where + ".trace",
                     "the base experiment's trace is not generated: say which trace the plan "
                     "sizes with load.trace (locomo, file with trace_file, or generate to replace "
                     "it with the LoCoMo-shaped generator)");
  }
  if (p.load.trace == "locomo") p.load.source = locomo_source(p);
  p.slo = parse_slo(v);
  p.axes = parse_search(v, file);
  if (v.has("replicas")) {
    const auto r = v.child("replicas");
    r.reject_unknown({"min", "max"});
    p.min_replicas = static_cast<std::uint32_t>(r.integer("min", 1, 1, 4096));
    p.max_replicas = static_cast<std::uint32_t>(r.integer("max", 512, 1, 4096));
    if (p.max_replicas < p.min_replicas) r.fail("max", "expected max >= min");
  }
  const auto obj =
      v.choice("objective", "cheapest", {"cheapest", "fewest_gpus", "most_users_per_gpu"});
  p.objective = obj == "cheapest"      ? Objective::kCheapest
                : obj == "fewest_gpus" ? Objective::kFewestGpus
                                       : Objective::kUsersPerGpu;
  p.prices_where = v.where("prices");
  if (v.has("prices")) {
    const auto pr = v.child("prices");
    for (const auto& k : pr.keys()) p.prices[k] = pr.number(k, 0, 0, 1e6);
  }
  if (v.has("probe")) {
    const auto pr = v.child("probe");
    pr.reject_unknown({"warmup_s", "window_s", "cooldown_s", "early_stop", "warm_store"});
    p.probe.warmup_s = pr.number("warmup_s", p.probe.warmup_s, 0, 1e7);
    p.probe.window_s = pr.number("window_s", p.probe.window_s, 1e-3, 1e7);
    p.probe.cooldown_s = pr.number("cooldown_s", p.probe.cooldown_s, 0, 1e7);
    p.probe.early_stop = pr.boolean("early_stop", true);
    p.probe.warm_store = pr.boolean("warm_store", false);
    if (p.probe.warm_store && p.load.trace != "generate") {
      pr.fail("warm_store",
              "a warm store needs 'load.trace: generate': a scaled trace writes only the facts "
              "of the users who ask, so a warm store would hold nothing else");
    }
  }
  if (v.has("options")) {
    const auto o = v.child("options");
    o.reject_unknown({"batch", "headroom_steps", "prune"});
    p.batch = static_cast<std::uint32_t>(o.integer("batch", p.batch, 1, 1 << 20));
    p.headroom_steps = static_cast<std::uint32_t>(o.integer("headroom_steps", 3, 0, 20));
    p.prune = o.boolean("prune", true);
  }
  if (v.has("output")) {
    const auto o = v.child("output");
    o.reject_unknown({"dir"});
    p.out_dir = o.text("dir", "results");
  }
  check_axes(p);
  return p;
}

}  // namespace inferscale::plan
