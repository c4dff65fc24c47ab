#include "plan/report.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "traces/error.h"

namespace inferscale::plan {

namespace fs = std::filesystem;

namespace {

std::string num(double v, int digits = 6) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*g", digits, v);
  return b;
}

/// A CSV field: quoted when it holds a comma, a quote or a line break.
std::string field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (const char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

/// A CSV line built field by field.
class Row {
 public:
  Row& operator<<(const std::string& value) {
    if (!line_.empty() || fields_ > 0) line_.push_back(',');
    line_.append(value);
    ++fields_;
    return *this;
  }
  std::string line() const { return line_ + "\n"; }

 private:
  std::string line_;
  std::size_t fields_ = 0;
};

/// A day's cost when the fleet follows the diurnal profile hour by hour, each hour's replicas
/// scaled linearly from the answer at the peak hour (an estimate: each hour is not searched).
double day_cost_scaled(const PlanConfig& plan, const Candidate& c, const CandidateResult& r) {
  if (plan.load.diurnal.empty()) return 24 * r.cost_per_hour;
  const double peak = *std::max_element(plan.load.diurnal.begin(), plan.load.diurnal.end());
  double cost = 0;
  for (const double w : plan.load.diurnal) {
    const double replicas = std::max(1.0, std::ceil(double(r.replicas) * w / peak - 1e-9));
    cost += candidate_cost_per_hour(c, static_cast<std::uint32_t>(replicas));
  }
  return cost;
}

}  // namespace

void write_atomically(const fs::path& path, const std::string& body) {
  const fs::path tmp = path.string() + ".tmp." + std::to_string(getpid());
  {
    std::ofstream f(tmp, std::ios::binary);
    f << body;
    f.close();
    if (!f) throw InputError(tmp.string(), std::string("write failed: ") + std::strerror(errno));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw InputError(path.string(), "cannot rename into place: " + ec.message());
}

double store_share(const PlanOutcome& o, std::size_t i) {
  const Candidate& c = o.candidates[i];
  const CandidateResult& r = o.results[i];
  if (o.population_fact_tokens <= 0 || c.kv_bytes_per_token_per_gpu == 0) return 0;
  const double tokens =
      double(r.replicas) * double(c.store_bytes_per_gpu) / double(c.kv_bytes_per_token_per_gpu);
  return tokens / o.population_fact_tokens;
}

std::vector<std::size_t> frontier(const PlanOutcome& o) {
  std::vector<std::size_t> ok;
  for (std::size_t i = 0; i < o.results.size(); ++i) {
    if (o.results[i].status == Status::kOk) ok.push_back(i);
  }
  std::stable_sort(ok.begin(), ok.end(), [&](std::size_t a, std::size_t b) {
    const auto &ra = o.results[a], &rb = o.results[b];
    if (ra.cost_per_hour != rb.cost_per_hour) return ra.cost_per_hour < rb.cost_per_hour;
    return ra.at_answer.ttft_p99_ms < rb.at_answer.ttft_p99_ms;
  });
  std::vector<std::size_t> front;
  double best_ttft = std::numeric_limits<double>::infinity();
  for (const auto i : ok) {
    if (o.results[i].at_answer.ttft_p99_ms < best_ttft) {
      front.push_back(i);
      best_ttft = o.results[i].at_answer.ttft_p99_ms;
    }
  }
  return front;
}

long best_candidate(const PlanConfig& plan, const PlanOutcome& o, const std::string& mode) {
  long best = -1;
  for (std::size_t i = 0; i < o.results.size(); ++i) {
    if (o.results[i].status != Status::kOk) continue;
    if (!mode.empty() && o.candidates[i].mode != mode) continue;
    if (best < 0 ||
        objective_score(plan, o.results[i]) < objective_score(plan, o.results[std::size_t(best)])) {
      best = long(i);
    }
  }
  return best;
}

void write_plan_files(const PlanConfig& plan, const PlanOutcome& o, std::uint64_t users,
                      const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw InputError(dir.string(), "cannot create the results folder: " + ec.message());
  std::string probes =
      "candidate,replicas,load_factor,pass,stopped_early,reused,measured,ttft_p50_ms,"
      "ttft_p99_ms,tpot_p99_ms,e2e_p99_ms,gpu_hit,missed,wall_s,key\n";
  for (const auto& p : o.probes) {
    const auto& r = p.result;
    Row row;
    row << std::to_string(p.spec.candidate) << std::to_string(p.spec.replicas)
        << num(p.spec.load_factor) << (r.pass ? "1" : "0") << (r.stopped_early ? "1" : "0")
        << (r.cached ? "1" : "0") << std::to_string(r.measured) << num(r.ttft_p50_ms)
        << num(r.ttft_p99_ms) << num(r.tpot_p99_ms) << num(r.e2e_p99_ms) << num(r.gpu_hit)
        << r.missed << num(r.wall_s, 4) << p.key;
    probes += row.line();
  }
  Row head;
  head << "candidate"
       << "run";
  for (const auto& a : plan.axes) head << field(a.key);
  for (const char* h : {"gpu_preset",
                        "tp",
                        "serving_mode",
                        "status",
                        "replicas",
                        "gpus",
                        "price_per_gpu_hour",
                        "cost_per_hour",
                        "cost_per_day",
                        "cost_per_day_scaled",
                        "users",
                        "users_per_gpu",
                        "users_per_gpu_capacity",
                        "headroom_lower",
                        "headroom_upper",
                        "ttft_p50_ms",
                        "ttft_p99_ms",
                        "tpot_p99_ms",
                        "e2e_p99_ms",
                        "gpu_hit",
                        "store_share",
                        "lower_bound",
                        "probes",
                        "non_monotone",
                        "note"}) {
    head << h;
  }
  std::string body = head.line();
  for (std::size_t i = 0; i < o.candidates.size(); ++i) {
    const Candidate& c = o.candidates[i];
    const CandidateResult& r = o.results[i];
    Row row;
    row << std::to_string(i) << field(c.run);
    for (const auto& v : c.values) row << field(v);
    row << field(c.gpu) << std::to_string(c.tp) << c.mode << to_string(r.status);
    if (r.status == Status::kOk) {
      const auto& a = r.at_answer;
      row << std::to_string(r.replicas) << std::to_string(r.gpus) << num(c.price_per_gpu_hour)
          << num(r.cost_per_hour) << num(24 * r.cost_per_hour) << num(day_cost_scaled(plan, c, r))
          << std::to_string(users) << num(r.users_per_gpu) << num(r.users_per_gpu_capacity)
          << num(r.headroom_lower, 4)
          << (r.headroom_upper > 0 ? num(r.headroom_upper, 4) : std::string()) << num(a.ttft_p50_ms)
          << num(a.ttft_p99_ms) << num(a.tpot_p99_ms) << num(a.e2e_p99_ms) << num(a.gpu_hit)
          << num(store_share(o, i), 4);
    } else {
      for (int k = 0; k < 6; ++k) row << "";
      row << std::to_string(users);
      for (int k = 0; k < 10; ++k) row << "";
    }
    row << std::to_string(c.lower_bound) << std::to_string(r.probes) << (r.non_monotone ? "1" : "0")
        << field(r.note);
    body += row.line();
  }
  std::string front = "candidate,label,gpus,cost_per_hour,ttft_p99_ms\n";
  for (const auto i : frontier(o)) {
    Row row;
    row << std::to_string(i) << field(o.candidates[i].label) << std::to_string(o.results[i].gpus)
        << num(o.results[i].cost_per_hour) << num(o.results[i].at_answer.ttft_p99_ms);
    front += row.line();
  }
  write_atomically(dir / "probes.csv", probes);
  write_atomically(dir / "frontier.csv", front);
  write_atomically(dir / "plan.csv", body);
}

void print_plan(const PlanConfig& plan, const PlanOutcome& o, std::uint64_t users, double wall_s,
                std::FILE* out) {
  std::size_t ok = 0, pruned = 0, infeasible = 0, over = 0;
  for (const auto& r : o.results) {
    ok += r.status == Status::kOk;
    pruned += r.status == Status::kPruned;
    infeasible += r.status == Status::kInfeasible;
    over += r.status == Status::kOverMax;
  }
  std::fprintf(
      out, "plan %s: %llu users, %.2f requests/s at the sizing peak, objective %s\n",
      plan.name.c_str(), static_cast<unsigned long long>(users),
      [&] {
        LoadConfig l = plan.load;
        l.users = users;
        return l.sizing_rate_per_s();
      }(),
      to_string(plan.objective));
  std::fprintf(out, "%-10s %-44s %8s %5s %9s %9s %9s %8s %7s\n", "best", "candidate", "replicas",
               "GPUs", "USD/hour", "TTFT p99", "TPOT p99", "headroom", "store");
  std::fprintf(out, "%-10s %-44s %8s %5s %9s %9s %9s %8s %7s\n", "", "", "", "", "", "(ms)", "(ms)",
               "(>=load)", "(share)");
  for (const std::string mode : {"text", "kv_inject", ""}) {
    const long b = best_candidate(plan, o, mode);
    const char* name = mode.empty() ? "overall" : mode.c_str();
    if (b < 0) {
      const bool any =
          mode.empty() || std::any_of(o.candidates.begin(), o.candidates.end(),
                                      [&](const Candidate& c) { return c.mode == mode; });
      std::fprintf(out, "%-10s %s\n", name,
                   any ? "(no candidate meets the SLOs within replicas.max)"
                       : "(no candidate in this mode)");
      continue;
    }
    const auto i = std::size_t(b);
    const auto& r = o.results[i];
    char share[32] = "-";
    if (o.candidates[i].mode == "kv_inject") {
      std::snprintf(share, sizeof share, "%.2f%%", 100 * store_share(o, i));
    }
    std::string label = o.candidates[i].label;
    if (label.size() > 44) label = label.substr(0, 41) + "...";
    std::fprintf(out, "%-10s %-44s %8u %5u %9.2f %9.1f %9.1f %7.2fx %7s\n", name, label.c_str(),
                 r.replicas, r.gpus, r.cost_per_hour, r.at_answer.ttft_p99_ms,
                 r.at_answer.tpot_p99_ms, r.headroom_lower, share);
  }
  std::size_t cold = 0;
  for (const auto& r : o.results) cold += r.status == Status::kOk && !r.at_answer.turned_over;
  if (cold > 0) {
    std::fprintf(out,
                 "warning: at %zu answers the warm-up did not fill the GPU store once (the window "
                 "saw a store still filling): lengthen probe.warmup_s\n",
                 cold);
  }
  std::fprintf(out,
               "candidates: %zu (%zu sized, %zu pruned, %zu infeasible, %zu over replicas.max); "
               "probes: %llu run (%llu stopped early), %llu reused; %.3f s per probe; %.1f s "
               "wall\n",
               o.candidates.size(), ok, pruned, infeasible, over,
               static_cast<unsigned long long>(o.probes_run),
               static_cast<unsigned long long>(o.probes_stopped_early),
               static_cast<unsigned long long>(o.probes_cached),
               o.probes_run ? o.probe_wall_s / double(o.probes_run) : 0.0, wall_s);
}

}  // namespace inferscale::plan
