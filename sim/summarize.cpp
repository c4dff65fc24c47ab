#include "sim/summarize.h"

#include <algorithm>
#include <tuple>

namespace inferscale {

namespace {

/// One instance's statistics added to its tier's summary (peaks: the largest instance's).
void add_tier(TierSummary& t, const StoreTier& st) {
  t.lookups += st.stats().lookups;
  t.hit_bytes += st.stats().hit_bytes;
  t.evictions += st.stats().evictions;
  t.capacity_bytes += st.capacity_bytes();
  t.peak_bytes = std::max(t.peak_bytes, st.stats().peak_bytes);
  t.final_bytes += st.used_bytes();
}

/// Per tier: its instances' statistics added up (peaks: the largest instance's), and per
/// node link the busiest node's.
void summarize_tiers(const SummaryInputs& in, RunSummary& s, SimTime span) {
  s.tiers[0].enabled = in.cfg.serving.mode == ServingMode::kKvInject;
  s.tiers[0].hits = s.gpu_hits;
  s.tiers[1].hits = s.host_hits;
  s.tiers[2].hits = s.disk_hits;
  s.tiers[3].hits = s.remote_hits;
  for (const auto& n : in.nodes) {
    // A partitioned run has a node per replica (sim/partition.cpp): another part's is not ours.
    if (!in.owned(static_cast<int>(std::uint32_t(n->index()) * in.cfg.replicas_per_node())))
      continue;
    for (int l = 0; l < kTierLevels; ++l) {
      const auto level = static_cast<TierLevel>(l);
      TierSummary& t = s.tiers[l];
      const TierFlow& f = n->flow(level);
      if (level != TierLevel::kRemote || n->index() == 0) {
        t.bytes_in += f.bytes_in;
        t.bytes_out += f.bytes_out;
        t.loads += f.loads;
        t.writes += f.writes;
        t.drops += f.drops;
        t.load_wait_ns += f.load_wait_ns;
      }
      const StoreTier* st = n->tier(level);
      if (st == nullptr || (level == TierLevel::kRemote && n->index() != 0)) continue;
      t.enabled = true;
      add_tier(t, *st);
    }
    const Link* links[] = {&n->disk_read(), &n->disk_write(), &n->net_in(), &n->net_out()};
    for (int i = 0; i < 4; ++i) {
      LinkSummary& ls = s.links[i];
      ls.bytes += links[i]->bytes();
      ls.transfers += links[i]->transfers();
      if (span > 0) {
        ls.busiest_fraction =
            std::max(ls.busiest_fraction, double(links[i]->busy_ns()) / double(span));
      }
    }
  }
  s.host_hit_bytes = s.tiers[1].hit_bytes;
}

}  // namespace

RunSummary summarize_run(const SummaryInputs& in) {
  RunSummary s;
  s.requests = in.metrics.completed();
  s.output_tokens = in.metrics.output_tokens();
  s.good = in.metrics.good();
  SimTime first_arrival = in.metrics.first_arrival(), last_finish = in.metrics.last_finish();
  if (in.outputs.fleet_span) {
    std::tie(first_arrival, last_finish) = in.outputs.fleet_span(first_arrival, last_finish);
  }
  const SimTime span = first_arrival < 0 ? 0 : last_finish - first_arrival;
  s.makespan_s = double(span) / 1e9;
  if (s.makespan_s > 0) {
    s.throughput_rps = double(s.requests) / s.makespan_s;
    s.tokens_per_s = double(s.output_tokens) / s.makespan_s;
    s.goodput_rps = double(s.good) / s.makespan_s;
  }
  s.ttft_ms = percentiles(in.metrics.ttft_ms());
  s.tpot_ms = percentiles(in.metrics.tpot_ms());
  s.e2e_ms = percentiles(in.metrics.e2e_ms());
  s.queue_ms = percentiles(in.metrics.queue_ms());
  s.gpu_hits = in.metrics.gpu_hits();
  s.host_hits = in.metrics.host_hits();
  s.disk_hits = in.metrics.disk_hits();
  s.remote_hits = in.metrics.remote_hits();
  s.misses = in.metrics.misses();
  s.lookups = s.gpu_hits + s.host_hits + s.disk_hits + s.remote_hits + s.misses;
  s.preemptions = in.metrics.preemptions();
  s.prefill_tokens = in.metrics.prefill_tokens();
  SimTime busy = 0;
  s.store_mean_bytes_by_replica.assign(in.replicas.size(), 0.0);
  for (const auto& r : in.replicas) {
    if (!in.owned(r->index())) continue;  // another part's
    const ReplicaStats& st = r->stats();
    busy += st.busy_ns;
    s.steps += st.steps;
    s.encodes += st.encodes;
    s.encode_tokens += st.encode_tokens;
    s.memory_write_encodes += st.memory_write_encodes;
    s.loads += st.loads;
    s.max_batch_tokens_seen = std::max(s.max_batch_tokens_seen, st.max_batch_tokens_seen);
    s.max_kv_blocks_used = std::max(s.max_kv_blocks_used, st.max_kv_blocks_used);
    s.kv_blocks_total = r->total_kv_blocks();
    if (const StoreTier* g = r->gpu_tier()) {
      s.lookup_bytes += g->stats().lookup_bytes;
      s.gpu_hit_bytes += g->stats().hit_bytes;
      s.store_capacity_bytes += g->capacity_bytes();
      s.store_peak_bytes = std::max(s.store_peak_bytes, g->stats().peak_bytes);
      s.store_final_bytes += g->used_bytes();
      if (span > 0) {
        const double mean = st.store_bytes_time_integral / double(span);
        s.store_mean_bytes += mean;
        s.store_mean_bytes_by_replica[std::size_t(r->index())] = mean;
      }
    }
    if (const StoreTier* g = r->gpu_tier()) {
      s.resident_facts += g->resident_count();
      add_tier(s.tiers[0], *g);
    }
    r->sweep_local_facts();
    s.local_facts += r->local_facts();
    s.local_facts_freed += r->local_facts_freed();
  }
  for (auto& n : in.nodes) {
    s.node_ids += n->ids_held();
    s.node_id_records += n->id_records();
    s.node_resident_facts += n->resident_facts();
  }
  if (span > 0) s.busy_fraction = double(busy) / (double(span) * double(in.replicas.size()));
  summarize_tiers(in, s, span);
  s.busy_ns = busy;
  s.events = in.events;
  s.facts = in.facts;
  s.users = in.users;
  s.wall_s = in.wall_s;
  s.events_per_s = s.wall_s > 0 ? double(in.events) / s.wall_s : 0;
  s.fused_steps = in.fused_steps;
  s.decode_run_steps = in.decode_run_steps;
  s.windows = in.windows;
  return s;
}

}  // namespace inferscale
