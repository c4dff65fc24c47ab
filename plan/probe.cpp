#include "plan/probe.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <thread>

#include "sim/executor_factory.h"
#include "sim/metrics.h"

namespace inferscale::plan {

namespace {

/// Thrown from the completion hook to end a simulation whose outcome is known.
struct ProbeStop {};

/// Nearest rank, as sim/metrics.cpp: the q-quantile of n values is the ceil(q n)-th smallest,
/// so it is at most X exactly when at most n - ceil(q n) values exceed X.
std::uint64_t allowed_violations(double share, std::uint64_t n) {
  const auto rank = static_cast<std::uint64_t>(std::ceil(share * double(n)));
  return n - std::min(rank, n);
}

struct Window {
  const ProbeTask& task;
  std::vector<double> ttft, tpot, e2e;
  std::vector<std::uint64_t> violations;  // per SLO
  std::vector<std::uint64_t> budget;      // per SLO, for the largest window the trace allows
  bool stopped = false;
  double warmup_fill_tokens = 0;  // facts that the warm-up's requests brought into the store

  explicit Window(const ProbeTask& t) : task(t), violations(t.slo.size(), 0) {
    for (const auto& s : t.slo)
      budget.push_back(allowed_violations(s.share, t.max_window_requests));
  }

  void on_complete(const Request& r) {
    if (r.arrival < task.warmup_ns) {
      warmup_fill_tokens += double(r.misses + r.host_hits) * task.fact_tokens;
      return;
    }
    if (r.arrival >= task.window_end_ns) return;
    const double ttft_ms = double(r.first_token - r.arrival) / 1e6;
    const double tpot_ms =
        r.output_tokens > 1 ? double((r.finish - r.first_token) / (r.output_tokens - 1)) / 1e6 : 0;
    const double e2e_ms = double(r.finish - r.arrival) / 1e6;
    ttft.push_back(ttft_ms);
    tpot.push_back(tpot_ms);
    e2e.push_back(e2e_ms);
    if (!task.early_stop) return;
    for (std::size_t i = 0; i < task.slo.size(); ++i) {
      const auto& s = task.slo[i];
      const double v = s.metric == "ttft" ? ttft_ms : s.metric == "tpot" ? tpot_ms : e2e_ms;
      // More misses than the largest window could absorb: the SLO is missed whatever follows.
      if (v > s.max_ms && ++violations[i] > budget[i]) {
        stopped = true;
        throw ProbeStop{};
      }
    }
  }
};

/// The q-quantile (nearest rank) of `v`, reordered in place.
double quantile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const auto n = v.size();
  auto i = static_cast<std::size_t>(std::ceil(q * double(n)));
  i = std::min(n, std::max<std::size_t>(i, 1)) - 1;
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(i), v.end());
  return v[i];
}

}  // namespace

ProbeResult run_probe(const ProbeTask& task) {
  const auto t0 = std::chrono::steady_clock::now();
  Window w(task);
  SimOutputs out;
  out.progress = false;
  out.fuse_quiet_steps = task.run.fast_paths && (task.run.executor.kind == "cost_model" ||
                                                 task.run.executor.kind == "calibrated");
  out.on_complete = [&w](const Request& r) { w.on_complete(r); };
  const RunConfig& run = task.run;
  ProbeResult res;
  try {
    Simulator sim(
        run, task.open, [&run](int i) { return make_executor(run, i); }, encode_pricing(run), out);
    sim.set_load_cost(load_pricing(run));
    const RunSummary s = sim.run();
    res.gpu_hit = s.lookups ? double(s.gpu_hits) / double(s.lookups) : 0;
  } catch (const ProbeStop&) {
  }
  res.stopped_early = w.stopped;
  res.turned_over = w.warmup_fill_tokens >= task.store_tokens;
  res.measured = w.ttft.size();
  std::vector<double>* values[] = {&w.ttft, &w.tpot, &w.e2e};
  res.pass = !w.stopped;
  for (const auto& s : task.slo) {
    auto& v = *values[s.metric == "ttft" ? 0 : s.metric == "tpot" ? 1 : 2];
    if (res.pass && quantile(v, s.share) > s.max_ms) {
      res.pass = false;
      res.missed = s.label;
    }
  }
  if (w.stopped) {
    for (std::size_t i = 0; i < task.slo.size(); ++i) {
      if (w.violations[i] > w.budget[i]) {
        res.missed = task.slo[i].label;
        break;
      }
    }
  }
  res.ttft_p50_ms = quantile(w.ttft, 0.50);
  res.ttft_p99_ms = quantile(w.ttft, 0.99);
  res.tpot_p99_ms = quantile(w.tpot, 0.99);
  res.e2e_p99_ms = quantile(w.e2e, 0.99);
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

namespace {

class LocalRunner final : public ProbeRunner {
 public:
  explicit LocalRunner(unsigned jobs) : jobs_(jobs) {}

  std::vector<ProbeResult> run(const std::vector<const ProbeTask*>& tasks,
                               const Done& done) override {
    std::vector<ProbeResult> results(tasks.size());
    if (tasks.empty()) return results;
    std::atomic<std::size_t> next{0};
    std::vector<std::exception_ptr> errors(tasks.size());
    auto work = [&] {
      for (std::size_t i; (i = next.fetch_add(1)) < tasks.size();) {
        try {
          results[i] = run_probe(*tasks[i]);
          if (done) done(*tasks[i], results[i]);
        } catch (...) {
          errors[i] = std::current_exception();
        }
      }
    };
    const unsigned n = std::min<unsigned>(jobs_, static_cast<unsigned>(tasks.size()));
    std::vector<std::thread> threads;
    for (unsigned t = 1; t < n; ++t) threads.emplace_back(work);
    work();
    for (auto& t : threads) t.join();
    for (auto& e : errors) {
      if (e) std::rethrow_exception(e);  // the first in task order: the same error every time
    }
    return results;
  }

 private:
  unsigned jobs_;
};

}  // namespace

std::unique_ptr<ProbeRunner> make_local_runner(unsigned jobs) {
  if (jobs == 0) jobs = std::max(1u, std::thread::hardware_concurrency());
  return std::make_unique<LocalRunner>(jobs);
}

}  // namespace inferscale::plan
