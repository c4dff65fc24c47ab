// `inferscale policy mrc`: miss-ratio curves (object and byte miss ratio vs store capacity) of
// eviction policies on a trace, one cache replay per (policy, capacity), in parallel threads.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "cli/commands.h"
#include "policies/registry.h"
#include "sim/cache_replay.h"

namespace inferscale::cli {

namespace {

struct Capacity {
  std::uint64_t bytes = 0;
  double fraction = 0;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

/// "5%" or "0.5%": share of all facts' KV bytes; "123456", "64MiB", "2GiB", "1GB": bytes.
Capacity parse_capacity(const std::string& s, std::uint64_t total_bytes) {
  const std::string where = "--capacities '" + s + "'";
  double v = 0;
  std::size_t used = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    throw InputError(where, "expected a percentage (5%) or a size in bytes (64MiB, 2GiB, 123456)");
  }
  const std::string unit = s.substr(used);
  double scale = 0;
  if (unit == "%") {
    if (!(v > 0 && v <= 100)) throw InputError(where, "expected a percentage in (0, 100]");
    Capacity c;
    c.fraction = v / 100.0;
    c.bytes = static_cast<std::uint64_t>(std::llround(c.fraction * double(total_bytes)));
    return c;
  }
  const std::pair<const char*, double> units[] = {
      {"", 1},     {"B", 1},        {"KB", 1e3},        {"MB", 1e6},
      {"GB", 1e9}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
  for (const auto& [name, factor] : units) {
    if (unit == name) scale = factor;
  }
  if (scale == 0)
    throw InputError(where, "unknown unit '" + unit + "' (%, B, KB, MB, GB, KiB, MiB, GiB)");
  if (!(v > 0)) throw InputError(where, "expected a positive capacity");
  Capacity c;
  c.bytes = static_cast<std::uint64_t>(std::llround(v * scale));
  c.fraction = total_bytes ? double(c.bytes) / double(total_bytes) : 0;
  return c;
}

struct MrcOptions {
  std::string trace, out, name, policies = "all", capacities = "1%,2%,5%,10%,20%,50%";
  std::string admission = "always";
  std::vector<std::string> params;  // POLICY.KEY=VALUE
  std::uint64_t kv_bytes_per_token = 131072;
  std::uint32_t cwe_window = 0;
  double encode_us_per_token = 27, encode_fixed_us = 0;
  std::uint64_t seed = 1;
  unsigned threads = 2;
};

/// The --param values (POLICY.KEY=VALUE) of one policy; a malformed one is an InputError.
Params params_of(const std::vector<std::string>& all, const std::string& policy) {
  Params p("--param " + policy);
  for (const auto& item : all) {
    const auto dot = item.find('.'), eq = item.find('=');
    if (dot == std::string::npos || eq == std::string::npos || eq < dot || dot == 0 ||
        eq == dot + 1) {
      throw InputError("--param '" + item + "'", "expected POLICY.KEY=VALUE");
    }
    if (item.substr(0, dot) != policy) continue;
    const std::string key = item.substr(dot + 1, eq - dot - 1);
    p.set(key, item.substr(eq + 1), "--param " + policy + "." + key);
  }
  return p;
}

struct Row {
  std::string policy;
  Capacity capacity;
  ReplayResult result;
};

int run_mrc(const MrcOptions& o) {
  std::vector<std::string> policies;
  for (const auto& p : split(o.policies)) {
    if (p == "all") {
      for (const auto& info : PolicyRegistry::eviction()) {
        if (info.name.rfind("plugin", 0) != 0) policies.push_back(info.name);  // need a path
      }
    } else if (PolicyRegistry::find_eviction(p) == nullptr) {
      PolicyRegistry::make_eviction(p, PolicyArgs{}, "--policies");  // throws with known names
    } else {
      policies.push_back(p);
    }
  }
  std::sort(policies.begin(), policies.end());
  policies.erase(std::unique(policies.begin(), policies.end()), policies.end());
  if (policies.empty()) throw InputError("--policies", "no policy given");
  if (PolicyRegistry::find_admission(o.admission) == nullptr) {
    PolicyRegistry::make_admission(o.admission, PolicyArgs{}, "--admission");
  }

  const ReplayTrace trace = ReplayTrace::read(o.trace, o.cwe_window);
  const std::uint64_t total = trace.total_fact_tokens() * o.kv_bytes_per_token;
  std::vector<Capacity> capacities;
  for (const auto& c : split(o.capacities)) capacities.push_back(parse_capacity(c, total));
  if (capacities.empty()) throw InputError("--capacities", "no capacity given");

  std::unique_ptr<AccessOracle> oracle;
  for (const auto& p : policies) {
    if (PolicyRegistry::find_eviction(p)->offline && !oracle) {
      oracle = std::make_unique<AccessOracle>(
          AccessOracle::from_csr(trace.request_offsets, trace.request_facts));
    }
  }

  std::vector<Row> rows;
  for (const auto& p : policies) {
    for (const auto& c : capacities) rows.push_back(Row{p, c, {}});
  }
  std::atomic<std::size_t> next{0};
  std::mutex error_mutex;
  std::exception_ptr error;
  auto work = [&] {
    for (std::size_t i = next++; i < rows.size(); i = next++) {
      try {
        ReplayOptions r;
        r.eviction = rows[i].policy;
        r.eviction_params = params_of(o.params, rows[i].policy);
        r.admission = o.admission;
        r.capacity_bytes = rows[i].capacity.bytes;
        r.kv_bytes_per_token = o.kv_bytes_per_token;
        r.encode_ns_per_token = static_cast<SimTime>(o.encode_us_per_token * 1000);
        r.encode_fixed_ns = static_cast<SimTime>(o.encode_fixed_us * 1000);
        r.seed = o.seed;
        rows[i].result = replay_cache(trace, oracle.get(), r);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next = rows.size();
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < std::max(1u, o.threads); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);

  const std::string name = o.name.empty() ? std::filesystem::path(o.trace).stem().string() : o.name;
  const std::string tmp = o.out + ".tmp";
  {
    std::ofstream csv(tmp);
    if (!csv) throw InputError(o.out, "cannot write the output file");
    csv << "trace,policy,capacity_bytes,capacity_fraction,object_miss_ratio,byte_miss_ratio,"
           "lookups,cost_miss_ratio,hits,misses\n";
    char line[512];
    for (const auto& r : rows) {
      const TierStats& st = r.result.stats;
      std::snprintf(line, sizeof(line), "%s,%s,%llu,%.6g,%.6f,%.6f,%llu,%.6f,%llu,%llu\n",
                    name.c_str(), r.policy.c_str(),
                    static_cast<unsigned long long>(r.capacity.bytes), r.capacity.fraction,
                    r.result.object_miss_ratio(), r.result.byte_miss_ratio(),
                    static_cast<unsigned long long>(st.lookups), r.result.cost_miss_ratio(),
                    static_cast<unsigned long long>(st.hits),
                    static_cast<unsigned long long>(st.lookups - st.hits));
      csv << line;
    }
    if (!csv.flush()) throw InputError(o.out, "cannot write the output file");
  }
  std::filesystem::rename(tmp, o.out);
  std::fprintf(stderr, "%zu policies x %zu capacities over %zu requests -> %s\n", policies.size(),
               capacities.size(), trace.request_count(), o.out.c_str());
  return 0;
}

}  // namespace

void add_policy_mrc_commands(CLI::App& app, Action& action) {
  auto* policy = policy_group(app);
  auto* mrc = policy->add_subcommand(
      "mrc",
      "Miss-ratio curves: replay a trace's requests through one store tier per policy and "
      "capacity (look up a request's facts, pin them, insert the misses)");
  auto o = std::make_shared<MrcOptions>();
  mrc->add_option("trace", o->trace, "Trace (JSONL)")->required();
  mrc->add_option("--out", o->out, "Output CSV")->required();
  mrc->add_option("--policies", o->policies,
                  "Comma-separated eviction policies, or all (every registered one but plugins)")
      ->capture_default_str();
  mrc->add_option("--capacities", o->capacities,
                  "Comma-separated capacities: N% of all facts' KV bytes, or bytes (64MiB, 2GiB)")
      ->capture_default_str();
  mrc->add_option("--admission", o->admission, "Admission policy")->capture_default_str();
  mrc->add_option(
      "--param", o->params,
      "A policy parameter, POLICY.KEY=VALUE (repeatable), e.g. s3fifo.small_fraction=0.2");
  mrc->add_option("--kv-bytes-per-token", o->kv_bytes_per_token,
                  "KV bytes per token (131072: Llama-3.1-8B in bf16)")
      ->capture_default_str();
  mrc->add_option("--cwe-window", o->cwe_window,
                  "Context turns encoded with a fact (counts in its recompute cost)")
      ->capture_default_str();
  mrc->add_option("--encode-us-per-token", o->encode_us_per_token,
                  "Recompute cost per token of fact and context, microseconds")
      ->capture_default_str();
  mrc->add_option("--encode-fixed-us", o->encode_fixed_us,
                  "Recompute cost per fact on top, microseconds")
      ->capture_default_str();
  mrc->add_option("--name", o->name, "Value of the trace column (default: file name stem)");
  mrc->add_option("--seed", o->seed, "Seed of randomized policies")->capture_default_str();
  mrc->add_option("--threads", o->threads, "Replays run in parallel")->capture_default_str();
  mrc->callback([&action, o] { action = [o] { return run_mrc(*o); }; });
}

}  // namespace inferscale::cli
