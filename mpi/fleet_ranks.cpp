#include "mpi/fleet_ranks.h"

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <string>

#include "mpi/world.h"
#include "sim/executor_factory.h"
#include "sim/partition.h"
#include "sim/router.h"
#include "sim/run_folder.h"
#include "sim/simulator.h"
#include "sim/trace_source.h"
#include "traces/error.h"

namespace inferscale::mpi {

namespace {

namespace fs = std::filesystem;

bool selected(const RunnerOptions& opts, const RunConfig& run) {
  return opts.only_runs.empty() ||
         std::find(opts.only_runs.begin(), opts.only_runs.end(), run.name) != opts.only_runs.end();
}

std::string broadcast(std::string text) {
  std::uint64_t n = text.size();
  MPI_Bcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  text.resize(n);
  MPI_Bcast(text.data(), static_cast<int>(n), MPI_CHAR, 0, MPI_COMM_WORLD);
  return text;
}

/// Every rank's values, concatenated on rank 0 (empty elsewhere).
std::vector<double> gather(const std::vector<double>& mine, const World& w) {
  const int n = static_cast<int>(mine.size());
  std::vector<int> counts(std::size_t(w.size), 0), offsets(std::size_t(w.size), 0);
  MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<double> all;
  if (w.rank == 0) {
    std::int64_t total = 0;
    for (int r = 0; r < w.size; ++r) {
      offsets[std::size_t(r)] = static_cast<int>(total);
      total += counts[std::size_t(r)];
    }
    if (total > std::numeric_limits<int>::max()) {
      throw std::runtime_error("more than 2^31 requests in a partitioned run");
    }
    all.resize(std::size_t(total));
  }
  MPI_Gatherv(mine.data(), n, MPI_DOUBLE, all.data(), counts.data(), offsets.data(), MPI_DOUBLE, 0,
              MPI_COMM_WORLD);
  return all;
}

/// The fleet's summary on rank 0 from every rank's (the span is already the fleet's).
RunSummary merge_summary(const RunSummary& mine, RequestValues& values, SimTime span,
                         std::uint32_t replicas, const World& w) {
  std::uint64_t sums[] = {mine.requests,
                          mine.output_tokens,
                          mine.good,
                          mine.lookups,
                          mine.gpu_hits,
                          mine.host_hits,
                          mine.misses,
                          mine.lookup_bytes,
                          mine.gpu_hit_bytes,
                          mine.host_hit_bytes,
                          mine.preemptions,
                          mine.prefill_tokens,
                          mine.encodes,
                          mine.encode_tokens,
                          mine.memory_write_encodes,
                          mine.loads,
                          mine.store_capacity_bytes,
                          mine.store_final_bytes,
                          mine.steps,
                          mine.users,
                          mine.fused_steps,
                          mine.decode_run_steps,
                          mine.local_facts,
                          mine.local_facts_freed,
                          mine.resident_facts,
                          mine.events,
                          static_cast<std::uint64_t>(mine.busy_ns)};
  constexpr int kSums = sizeof sums / sizeof sums[0];
  std::uint64_t maxima[] = {mine.store_peak_bytes, mine.max_batch_tokens_seen,
                            mine.max_kv_blocks_used, mine.kv_blocks_total};
  constexpr int kMaxima = sizeof maxima / sizeof maxima[0];
  MPI_Allreduce(MPI_IN_PLACE, sums, kSums, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, maxima, kMaxima, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  double wall = mine.wall_s;
  MPI_Allreduce(MPI_IN_PLACE, &wall, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  // Each replica's mean store bytes comes from its own rank (0.0 from the others: exact), then
  // they add up in replica order, as in one process.
  std::vector<double> means = mine.store_mean_bytes_by_replica;
  means.resize(replicas, 0.0);
  MPI_Allreduce(MPI_IN_PLACE, means.data(), static_cast<int>(replicas), MPI_DOUBLE, MPI_SUM,
                MPI_COMM_WORLD);
  // The tiers' figures (each rank counts its own replicas' tiers: a node per replica here) and
  // the hits found below the host tier.
  std::vector<std::uint64_t> tier_sums, tier_maxima;
  for (const TierSummary& t : mine.tiers) {
    tier_sums.insert(
        tier_sums.end(),
        {t.capacity_bytes, t.final_bytes, t.hits, t.lookups, t.hit_bytes, t.evictions, t.bytes_in,
         t.writes, t.bytes_out, t.loads, t.drops, static_cast<std::uint64_t>(t.load_wait_ns)});
    tier_maxima.push_back(t.peak_bytes);
  }
  for (const LinkSummary& l : mine.links) tier_sums.insert(tier_sums.end(), {l.bytes, l.transfers});
  tier_sums.insert(tier_sums.end(), {mine.disk_hits, mine.remote_hits});
  MPI_Allreduce(MPI_IN_PLACE, tier_sums.data(), static_cast<int>(tier_sums.size()), MPI_UINT64_T,
                MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, tier_maxima.data(), static_cast<int>(tier_maxima.size()),
                MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  std::vector<double> busiest;
  for (const LinkSummary& l : mine.links) busiest.push_back(l.busiest_fraction);
  MPI_Allreduce(MPI_IN_PLACE, busiest.data(), static_cast<int>(busiest.size()), MPI_DOUBLE, MPI_MAX,
                MPI_COMM_WORLD);

  RunSummary s = mine;
  int i = 0;
  for (std::uint64_t* f : {&s.requests,
                           &s.output_tokens,
                           &s.good,
                           &s.lookups,
                           &s.gpu_hits,
                           &s.host_hits,
                           &s.misses,
                           &s.lookup_bytes,
                           &s.gpu_hit_bytes,
                           &s.host_hit_bytes,
                           &s.preemptions,
                           &s.prefill_tokens,
                           &s.encodes,
                           &s.encode_tokens,
                           &s.memory_write_encodes,
                           &s.loads,
                           &s.store_capacity_bytes,
                           &s.store_final_bytes,
                           &s.steps,
                           &s.users,
                           &s.fused_steps,
                           &s.decode_run_steps,
                           &s.local_facts,
                           &s.local_facts_freed,
                           &s.resident_facts,
                           &s.events}) {
    *f = sums[i++];
  }
  s.busy_ns = static_cast<std::int64_t>(sums[i]);
  s.store_peak_bytes = maxima[0];
  s.max_batch_tokens_seen = maxima[1];
  s.max_kv_blocks_used = maxima[2];
  s.kv_blocks_total = maxima[3];
  std::size_t k = 0;
  for (std::size_t t = 0; t < s.tiers.size(); ++t) {
    TierSummary& tier = s.tiers[t];
    for (std::uint64_t* f : {&tier.capacity_bytes, &tier.final_bytes, &tier.hits, &tier.lookups,
                             &tier.hit_bytes, &tier.evictions, &tier.bytes_in, &tier.writes,
                             &tier.bytes_out, &tier.loads, &tier.drops}) {
      *f = tier_sums[k++];
    }
    tier.load_wait_ns = static_cast<SimTime>(tier_sums[k++]);
    tier.peak_bytes = tier_maxima[t];
  }
  for (std::size_t l = 0; l < s.links.size(); ++l) {
    s.links[l].bytes = tier_sums[k++];
    s.links[l].transfers = tier_sums[k++];
    s.links[l].busiest_fraction = busiest[l];
  }
  s.disk_hits = tier_sums[k++];
  s.remote_hits = tier_sums[k++];
  s.store_mean_bytes = 0;
  if (span > 0) {
    for (const double m : means) s.store_mean_bytes += m;
  }
  s.store_mean_bytes_by_replica = std::move(means);
  s.makespan_s = double(span) / 1e9;
  s.throughput_rps = s.tokens_per_s = s.goodput_rps = 0;
  if (s.makespan_s > 0) {
    s.throughput_rps = double(s.requests) / s.makespan_s;
    s.tokens_per_s = double(s.output_tokens) / s.makespan_s;
    s.goodput_rps = double(s.good) / s.makespan_s;
  }
  s.busy_fraction = span > 0 ? double(s.busy_ns) / (double(span) * double(replicas)) : 0.0;
  s.wall_s = wall;
  s.events_per_s = wall > 0 ? double(s.events) / wall : 0;
  // Exact percentiles: every request's values on rank 0, one metric at a time.
  Percentiles* targets[] = {&s.ttft_ms, &s.tpot_ms, &s.e2e_ms, &s.queue_ms};
  std::vector<double>* sources[] = {&values.ttft_ms, &values.tpot_ms, &values.e2e_ms,
                                    &values.queue_ms};
  for (int m = 0; m < 4; ++m) {
    std::vector<double> all = gather(*sources[m], w);
    std::vector<double>().swap(*sources[m]);
    if (w.rank == 0) *targets[m] = percentiles(all);
  }
  return s;
}

}  // namespace

std::string partition_check(const ExperimentConfig& exp, const RunnerOptions& opts) {
  for (const auto& run : exp.runs) {
    if (!selected(opts, run)) continue;
    const std::string why = partition_refusal(run);
    if (!why.empty()) return exp.file + ": run '" + run.name + "': " + why;
  }
  return "";
}

std::vector<RunOutcome> run_partitioned(const ExperimentConfig& exp, const RunnerOptions& opts) {
  const World w = world();
  for (const auto& name : opts.only_runs) {
    const bool known = std::any_of(exp.runs.begin(), exp.runs.end(),
                                   [&](const RunConfig& r) { return r.name == name; });
    if (!known) throw InputError("--runs " + name, "no run named '" + name + "' in " + exp.file);
  }
  validate_experiment(exp);
  if (const std::string why = partition_check(exp, opts); !why.empty()) throw InputError("", why);
  std::vector<RunOutcome> outcomes;
  const RankFault fault = test_rank_fault();
  long started = 0;
  for (const auto& run : exp.runs) {
    if (!selected(opts, run)) continue;
    const fs::path base = fs::path(opts.out_dir.empty() ? run.output.dir : opts.out_dir) / exp.name;
    std::unique_ptr<RunFolder> folder;
    std::string tmp;
    if (w.rank == 0) {
      folder = std::make_unique<RunFolder>(
          base, run.name, opts.out_dir.empty() ? exp.file + ": output.dir" : "--out");
      tmp = folder->tmp().string();
    }
    tmp = broadcast(tmp);  // each rank writes its part's files beside rank 0's
    const bool warm = run.store.warm && run.serving.mode == ServingMode::kKvInject;
    // A generated trace: other ranks' users' facts and memory writes are never generated and
    // their requests come without facts (the requests' draws are still made, so this rank's
    // records are the same, and the records left out still count in trace positions).
    const HashRing home(static_cast<int>(run.replicas));
    TraceOpener open = streamed_trace(
        run, warm, [home, w](std::uint64_t user) { return home.owner(user) % w.size == w.rank; });
    if (!open) {
      // Written once (by rank 0), then read by all.
      std::string trace;
      if (w.rank == 0) trace = materialize_trace(run, (base / ".traces").string());
      trace = broadcast(trace);
      open = [trace, fast = run.fast_paths] { return open_trace(trace, fast); };
    }
    const std::string part = tmp + "/part-" + std::to_string(w.rank);
    SimOutputs out;
    out.part = static_cast<std::uint32_t>(w.rank);
    out.parts = static_cast<std::uint32_t>(w.size);
    if (run.output.requests_csv) {
      out.requests_csv = part + ".requests.csv";
      out.requests_order = part + ".requests.order";
    }
    if (run.output.timeline) {
      out.timeline_json = part + ".timeline.json";
      out.timeline_order = part + ".timeline.order";
    }
    out.progress = opts.progress && w.rank == 0;
    if (w.rank == 0) out.partial_dir = tmp;
    out.fuse_quiet_steps =
        run.fast_paths && (run.executor.kind == "cost_model" || run.executor.kind == "calibrated");
    SimTime span = 0;
    out.fleet_span = [&span](SimTime first, SimTime last) {
      std::int64_t v[2] = {first < 0 ? std::numeric_limits<std::int64_t>::max() : first, -last};
      MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
      first = v[0] == std::numeric_limits<std::int64_t>::max() ? -1 : v[0];
      last = -v[1];
      span = first < 0 ? 0 : last - first;
      return std::make_pair(first, last);
    };
    set_doing("simulating its part of run " + exp.name + "/" + run.name);
    fault.fail_if_due(w.rank, started++, "runs");
    RunSummary mine;
    RequestValues values;
    {
      Simulator sim(
          run, open, [&run](int i) { return make_executor(run, i); }, encode_pricing(run), out);
      sim.set_load_cost(load_pricing(run));
      mine = sim.run();
      values = sim.take_request_values();
    }  // the part's memory goes before the merge
    set_doing("merging run " + exp.name + "/" + run.name);
    const RunSummary merged = merge_summary(mine, values, span, run.replicas, w);
    MPI_Barrier(MPI_COMM_WORLD);  // every part's files are closed
    if (w.rank != 0) continue;
    auto files = [&](const std::string& suffix) {
      std::vector<std::string> v;
      for (int r = 0; r < w.size; ++r) v.push_back(tmp + "/part-" + std::to_string(r) + suffix);
      return v;
    };
    auto remove_all = [](const std::vector<std::string>& v) {
      for (const auto& f : v) fs::remove(f);
    };
    if (run.output.requests_csv) {
      merge_requests_csv(files(".requests.csv"), files(".requests.order"), tmp + "/requests.csv");
      remove_all(files(".requests.csv"));
      remove_all(files(".requests.order"));
    }
    if (run.output.timeline) {
      merge_timeline(files(".timeline.json"), files(".timeline.order"), tmp + "/timeline.json");
      remove_all(files(".timeline.json"));
      remove_all(files(".timeline.order"));
    }
    {
      const std::string body = summary_json(run, merged);
      std::ofstream f(tmp + "/summary.json", std::ios::binary);
      f << body;
      f.close();
      if (!f) throw InputError(tmp + "/summary.json", "write failed");
    }
    const fs::path dir = base / run.name;
    folder->commit(dir);
    remove_tree(base / (run.name + ".partial"));
    outcomes.push_back(RunOutcome{run, merged, dir.string()});
  }
  return outcomes;
}

}  // namespace inferscale::mpi
