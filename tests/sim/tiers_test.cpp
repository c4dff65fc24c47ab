// The fact store's hierarchy: fact KV precision (store.kv_dtype), nodes, the disk and remote
// tiers, their transfers and their accounting.
#include <nlohmann/json.hpp>

#include <map>
#include <random>
#include <set>

#include "kernels/reference/kv_quant.h"
#include "sim/config/experiment.h"
#include "sim/node_store.h"
#include "sim/runner.h"
#include "tests/catch.h"
#include "tests/sim/config_errors.h"
#include "tests/sim/sim_test_util.h"
#include "tests/sim/small_trace.h"
#include "traces/error.h"

using namespace inferscale;
using namespace inferscale::test;

namespace {

std::vector<RunOutcome> run_yaml(const std::filesystem::path& dir, const std::string& yaml,
                                 const std::vector<std::string>& sets = {}) {
  const auto exp = load_experiment(write_text(dir / "exp.yaml", yaml), sets);
  validate_experiment(exp);
  RunnerOptions opts;
  opts.out_dir = (dir / "results").string();
  opts.progress = false;
  return run_experiment(exp, opts);
}

nlohmann::json summary_of(const RunOutcome& o) {
  return nlohmann::json::parse(read_text(std::filesystem::path(o.dir) / "summary.json"));
}

}  // namespace

TEST_CASE("store.kv_dtype sets the bytes of stored fact KV as the quantization formats do") {
  const auto dir = temp_dir("kv_dtype_bytes");
  const std::string base = "experiment: e\nmodel: llama-3.1-8b\ngpu: h200\ntrace: " +
                           source_path("tests/sim/data/golden.jsonl") + "\n";
  for (const char* dtype : {"bf16", "fp8", "int8"}) {
    for (const std::uint32_t tp : {1u, 2u}) {
      const auto exp =
          load_experiment(write_text(dir / "c.yaml", base),
                          {std::string("store.kv_dtype=") + dtype, "tp=" + std::to_string(tp)});
      const RunConfig& r = exp.runs.front();
      const ModelConfig& m = r.model;
      const KvFormat f = parse_kv_format(dtype);
      // A K and a V vector per layer and KV head on this GPU, each as the format stores it.
      const std::uint64_t expected = 2ull * m.layers * m.kv_heads_per_gpu(tp) *
                                     kv_format_vector_bytes(f, m.head_dim, m.dtype_bytes);
      INFO(dtype << " tp " << tp);
      CHECK(r.fact_kv_bytes_per_token_per_gpu() == expected);
      // Request KV stays in the model's dtype.
      CHECK(r.kv_bytes_per_token_per_gpu() ==
            2ull * m.layers * m.kv_heads_per_gpu(tp) * m.head_dim * m.dtype_bytes);
    }
  }
  const auto exp = load_experiment(write_text(dir / "c.yaml", base), {"store.kv_dtype=fp8"});
  CHECK(exp.runs.front().fact_kv_bytes_per_token_per_gpu() == 2ull * 32 * 8 * (128 + 4));
}

TEST_CASE("fp8 fact KV fills the stores in fp8 blocks and leaves request KV alone") {
  const auto dir = temp_dir("kv_dtype_run");
  const std::string yaml =
      "experiment: e\nseed: 3\nmodel: llama-3.1-8b\ngpu: h200\n"
      "trace: {generate: {users: 20, requests: 200, k: 20, arrival: poisson, rate: 6}}\n"
      "serving: {k: 20, mode: kv_inject}\n"
      "store: {gpu: {capacity: 0.2%}, host: {capacity: 64GB, async_loads: true}}\n"
      "runs:\n  - {name: bf16, store: {kv_dtype: bf16}}\n"
      "  - {name: fp8, store: {kv_dtype: fp8}}\n";
  const auto runs = run_yaml(dir, yaml);
  REQUIRE(runs.size() == 2);
  const RunSummary& bf16 = runs[0].summary;
  const RunSummary& fp8 = runs[1].summary;
  const std::uint64_t bf16_block = 16ull * 131072, fp8_block = 16ull * 2 * 32 * 8 * 132;
  REQUIRE(bf16.store_peak_bytes > 0);
  CHECK(bf16.store_peak_bytes % bf16_block == 0);
  CHECK(fp8.store_peak_bytes % fp8_block == 0);
  CHECK(fp8.store_peak_bytes % bf16_block != 0);
  // The same GPU bytes hold about twice the facts: more of a request's facts are found there.
  CHECK(fp8.gpu_hits > bf16.gpu_hits);
  CHECK(fp8.kv_blocks_total == bf16.kv_blocks_total);
  CHECK(summary_of(runs[1])["config"]["store"]["kv_dtype"] == "fp8");
}

namespace {

/// Two users of three 16-token facts each, on the tiny model (16 bytes a token: a fact is one
/// 256-byte block, and moves 256 bytes). Links and PCIe at 0.256 GB/s: a fact crosses any of
/// them in exactly 1,000 ns.
const char* kTwoUsers =
    "{\"type\":\"header\",\"version\":1,\"source\":\"hand\"}\n"
    "{\"type\":\"fact\",\"id\":100,\"user\":1,\"tokens\":16}\n"
    "{\"type\":\"fact\",\"id\":101,\"user\":1,\"tokens\":16}\n"
    "{\"type\":\"fact\",\"id\":102,\"user\":1,\"tokens\":16}\n"
    "{\"type\":\"fact\",\"id\":200,\"user\":2,\"tokens\":16}\n"
    "{\"type\":\"fact\",\"id\":201,\"user\":2,\"tokens\":16}\n"
    "{\"type\":\"fact\",\"id\":202,\"user\":2,\"tokens\":16}\n"
    "{\"type\":\"request\",\"id\":1,\"user\":1,\"time\":0,\"query_tokens\":8,"
    "\"output_tokens\":2,\"facts\":[100,101,102]}\n"
    "{\"type\":\"request\",\"id\":2,\"user\":2,\"time\":1000000000,\"query_tokens\":8,"
    "\"output_tokens\":2,\"facts\":[200,201,202]}\n";

std::string hand_config(const std::string& trace, const std::string& store) {
  return tiny_config(trace,
                     "gpu: {name: hand, memory: 1MiB, bf16_tflops: 1000000, hbm_gbps: 1000000000,"
                     " pcie_gbps: 0.256, pcie_efficiency: 1, step_overhead_us: 1000,"
                     " per_seq_overhead_us: 0}\n"
                     "serving: {k: 3, mode: kv_inject}\n" +
                         store);
}

}  // namespace

TEST_CASE("two users, three tiers: load times and hit counts computed by hand") {
  const auto dir = temp_dir("hand_tiers");
  const auto trace = write_text(dir / "t.jsonl", kTwoUsers);
  // GPU: 3 facts; disk: 2 facts, 10 us; remote: 8 facts, 20 us; every tier LRU, writing back.
  const std::string store =
      "store:\n"
      "  gpu: {capacity: 768}\n"
      "  disk: {capacity: 512, read_gbps: 0.256, write_gbps: 0.256, latency_us: 10}\n"
      "  remote: {capacity: 2048, gbps: 0.256, latency_us: 20}\n";
  const auto runs = run_yaml(dir, hand_config(trace, store));
  REQUIRE(runs.size() == 1);
  const RunSummary& s = runs[0].summary;
  // Warm start (free): the GPU keeps the last three facts declared; 100..102 went down as
  // each arrival evicted the oldest: 100 to disk, 101 to disk, 102 to disk pushing 100 to the
  // remote store. GPU {200, 201, 202}, disk {101, 102}, remote {100}.
  //
  // Request 1 (t = 0): 100 from remote, 101 and 102 from disk. Each load's GPU victim (200,
  // 201, 202) is refused by the disk, whose two facts this request reads, and goes to the
  // remote store. 100: network 0 -> 1,000 + 20,000 latency, then PCIe after it: 22,000. 101:
  // disk 0 -> 1,000 + 10,000 = 11,000, PCIe after the previous load: 23,000. 102: disk
  // 1,000 -> 2,000 + 10,000, PCIe: 24,000.
  //
  // Request 2 (t = T = 1 s): 200, 201, 202 from remote (network T, T+1,000, T+2,000 ->
  // T+21,000, T+22,000, T+23,000 with latency). Promotions into the disk: 200 evicts 101
  // (written to remote), 201 evicts 100 (held by remote already); 202 finds the disk pinned.
  // GPU victims: 100 goes to the disk (evicting 102, written to remote), 101 and 102 are held
  // by the remote store. PCIe: T+22,000, T+23,000, T+24,000.
  CHECK(s.gpu_hits == 0);
  CHECK(s.disk_hits == 2);
  CHECK(s.remote_hits == 4);
  CHECK(s.misses == 0);
  const TierSummary& disk = s.tiers[2];
  const TierSummary& remote = s.tiers[3];
  CHECK(disk.loads == 2);
  CHECK(disk.load_wait_ns == 23000 + 24000);
  CHECK(remote.loads == 4);
  CHECK(remote.load_wait_ns == 22000 + 22000 + 23000 + 24000);
  CHECK(disk.bytes_out == 2 * 256);
  CHECK(remote.bytes_out == 4 * 256);
  CHECK(disk.writes == 3);  // 200 and 201 promoted, 100 demoted (request 2)
  CHECK(disk.bytes_in == 3 * 256);
  CHECK(remote.writes == 5);  // 200, 201, 202 (request 1), 101, 102 (request 2)
  CHECK(remote.bytes_in == 5 * 256);
  for (const TierSummary* t : {&s.tiers[0], &disk, &remote}) CHECK(t->drops == 0);
  CHECK(s.tiers[0].bytes_in == 6 * 256);  // every load
  // Offloads of the GPU victims that a tier below took: 200, 201, 202 and 100 (101 and 102
  // were held by the remote store already).
  CHECK(s.tiers[0].bytes_out == 4 * 256);
  CHECK(s.tiers[0].final_bytes == 3 * 256);  // {200, 201, 202}
  CHECK(disk.final_bytes == 2 * 256);        // {200, 201}
  CHECK(remote.final_bytes == 6 * 256);      // every fact
  CHECK(s.links[0].transfers == 2);          // disk reads
  CHECK(s.links[1].transfers == 3);          // disk writes
  CHECK(s.links[2].transfers == 4);          // network in
  CHECK(s.links[3].transfers == 5);          // network out
  // Each request's prefill waits for its last load (24,000 ns after its arrival), then one
  // step of overhead (1 ms) gives its first token.
  const auto rows = read_csv(std::filesystem::path(runs[0].dir) / "requests.csv");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0][4] == "1.024000");  // first_token, ms
  CHECK(rows[1][4] == "1001.024000");
}

TEST_CASE("a link carries one transfer at a time, at its bandwidth, with at most its queue") {
  std::mt19937_64 rng(7);
  for (const std::uint32_t depth : {0u, 1u, 4u}) {
    Link link(0.5, 3, depth);  // 0.5 bytes per ns, 3 us
    std::vector<Link::Busy> log;
    link.set_log(&log);
    std::vector<std::pair<SimTime, SimTime>> flights;  // [start, arrival)
    SimTime now = 0;
    for (int i = 0; i < 2000; ++i) {
      now += static_cast<SimTime>(rng() % 4000);
      const std::uint64_t bytes = 1 + rng() % 5000;
      const SimTime arrival = link.transfer(bytes, now);
      REQUIRE(log.size() == std::size_t(i) + 1);
      const Link::Busy& b = log.back();
      CHECK(b.start >= now);
      CHECK(double(b.end - b.start) >= double(bytes) / 0.5);  // never faster than 0.5 B/ns
      CHECK(arrival == b.end + 3000);
      if (i > 0) CHECK(b.start >= log[log.size() - 2].end);  // one at a time
      flights.emplace_back(b.start, arrival);
    }
    if (depth > 0) {
      // At any transfer's start, at most `depth - 1` earlier ones are still in flight.
      for (std::size_t i = 0; i < flights.size(); ++i) {
        std::uint32_t in_flight = 0;
        for (std::size_t j = i >= 64 ? i - 64 : 0; j < i; ++j) {
          if (flights[j].second > flights[i].first) ++in_flight;
        }
        CHECK(in_flight < depth);
      }
    }
    CHECK(link.bytes() > 0);
    CHECK(link.transfers() == 2000);
  }
}

namespace {

/// A run config with the given store keys over the tiny model (for NodeStore alone).
RunConfig tiers_run(const std::filesystem::path& dir, const std::string& store) {
  const auto trace = write_text(dir / "t.jsonl", kTwoUsers);
  const auto exp = load_experiment(write_text(dir / "c.yaml", hand_config(trace, store)), {});
  return exp.runs.front();
}

/// `n` facts of 16 tokens (one 256-byte block each) over 10 users.
void add_facts(FactTable& facts, std::uint32_t n) {
  for (std::uint32_t i = 0; i < n; ++i) {
    FactInfo f;
    f.user = i % 10;
    f.tokens = 16;
    facts.add(f, 1000 + i, false);
  }
}

/// Random traffic on one node's tiers as replicas make it: GPU evictions demoted, hits below
/// the GPU fetched (promoted upward). After each step `check(g, wrote)` sees the node: `g` the
/// fact touched, `wrote` whether it was written below the GPU (a demotion).
template <typename Check>
void churn(NodeStore& node, std::uint32_t facts, std::uint64_t seed, Check check) {
  std::mt19937_64 rng(seed);
  SimTime now = 0;
  for (int i = 0; i < 3000; ++i) {
    now += 1000;
    const FactId g = rng() % facts;
    const bool wrote = rng() % 3 != 0;
    if (!wrote) {
      const TierLevel t = node.highest(g);
      if (t != TierLevel::kGpu) node.fetch(g, t, 256, now);
    } else {
      node.demote(g, TierLevel::kGpu, now);
    }
    node.host_evicted().clear();
    check(g, wrote);
  }
}

}  // namespace

TEST_CASE("no tier below the GPU ever holds more than its capacity") {
  const auto dir = temp_dir("tiers_capacity");
  const RunConfig run =
      tiers_run(dir,
                "store:\n  gpu: {capacity: 768}\n  host: {capacity: 1280, eviction: fifo}\n"
                "  disk: {capacity: 2560, read_gbps: 1, write_gbps: 1, latency_us: 10,"
                " eviction: lfu}\n"
                "  remote: {capacity: 5120, gbps: 1, latency_us: 20}\n");
  FactTable facts;
  add_facts(facts, 200);
  RemoteStore remote(run, facts);
  NodeStore node(0, run, facts, &remote);
  std::uint64_t checks = 0;
  churn(node, 200, 3, [&](FactId, bool) {
    for (const TierLevel t : {TierLevel::kHost, TierLevel::kDisk, TierLevel::kRemote}) {
      const StoreTier* s = node.tier(t);
      REQUIRE(s != nullptr);
      CHECK(s->used_bytes() <= s->capacity_bytes());
      ++checks;
    }
  });
  CHECK(checks == 9000);
  // The tiers were full: the check could have failed.
  CHECK(node.tier(TierLevel::kHost)->stats().evictions > 0);
  CHECK(node.tier(TierLevel::kDisk)->stats().evictions > 0);
  CHECK(node.tier(TierLevel::kRemote)->stats().evictions > 0);
}

TEST_CASE("a fact written below the GPU is never lost on an eviction chain unless a tier drops") {
  const auto dir = temp_dir("tiers_chain");
  FactTable facts;
  const std::uint32_t n = 120;
  add_facts(facts, n);
  // The remote store holds every fact: whatever the host and the disk evict goes down.
  const std::string base =
      "store:\n  gpu: {capacity: 768}\n  host: {capacity: 1280, eviction: lru}\n"
      "  remote: {capacity: 30720, gbps: 1, latency_us: 20}\n";
  for (const char* disk_write : {"back", "none"}) {
    INFO("disk.write " << disk_write);
    const RunConfig run =
        tiers_run(dir, base +
                           "  disk: {capacity: 2560, read_gbps: 1, write_gbps: 1, latency_us: 10,"
                           " write: " +
                           disk_write + "}\n");
    RemoteStore remote(run, facts);
    NodeStore node(0, run, facts, &remote);
    std::set<FactId> written;
    std::uint64_t lost = 0;
    churn(node, n, 11, [&](FactId g, bool wrote) {
      if (wrote) written.insert(g);
      lost = 0;
      for (const FactId f : written) lost += node.highest(f) == TierLevel::kGpu ? 1 : 0;
      if (std::string(disk_write) == "back") CHECK(lost == 0);
    });
    const std::uint64_t drops =
        node.flow(TierLevel::kHost).drops + node.flow(TierLevel::kDisk).drops + remote.flow.drops;
    if (std::string(disk_write) == "back") {
      CHECK(drops == 0);
    } else {
      // The disk drops what it evicts: facts are lost then, and only then.
      CHECK(lost > 0);
      CHECK(node.flow(TierLevel::kDisk).drops >= lost);
      CHECK(node.flow(TierLevel::kHost).drops == 0);
    }
  }
}

TEST_CASE("a hit below the GPU is read over its own tier's link and promoted above it") {
  const auto dir = temp_dir("tiers_promote");
  const RunConfig run =
      tiers_run(dir,
                "store:\n  gpu: {capacity: 768}\n  host: {capacity: 2560}\n"
                "  disk: {capacity: 2560, read_gbps: 0.256, write_gbps: 0.256, latency_us: 10}\n"
                "  remote: {capacity: 5120, gbps: 0.256, latency_us: 20}\n");
  FactTable facts;
  add_facts(facts, 4);
  RemoteStore remote(run, facts);
  NodeStore node(0, run, facts, &remote);
  REQUIRE(node.write(0, TierLevel::kDisk, 0));
  REQUIRE(node.write(1, TierLevel::kRemote, 0));
  CHECK(node.highest(0) == TierLevel::kDisk);
  CHECK(node.highest(1) == TierLevel::kRemote);
  const std::uint64_t disk_reads = node.disk_read().bytes(), net_reads = node.net_in().bytes();
  // From disk: over the disk's read link (1,000 ns on the wire + 10 us), into host memory.
  CHECK(node.fetch(0, TierLevel::kDisk, 256, 100000) == 100000 + 1000 + 10000);
  CHECK(node.disk_read().bytes() == disk_reads + 256);
  CHECK(node.net_in().bytes() == net_reads);
  CHECK(node.resident(0, TierLevel::kHost));
  CHECK(node.resident(0, TierLevel::kDisk));  // copies below stay
  // From remote: over the network, into host memory and onto the disk (over its write link).
  const std::uint64_t disk_writes = node.disk_write().bytes();
  CHECK(node.fetch(1, TierLevel::kRemote, 256, 200000) == 200000 + 1000 + 20000);
  CHECK(node.net_in().bytes() == net_reads + 256);
  CHECK(node.disk_read().bytes() == disk_reads + 256);
  CHECK(node.disk_write().bytes() == disk_writes + 256);
  CHECK(node.resident(1, TierLevel::kHost));
  CHECK(node.resident(1, TierLevel::kDisk));
  CHECK(node.resident(1, TierLevel::kRemote));
  CHECK(node.highest(1) == TierLevel::kHost);
}

TEST_CASE("a node's replicas share its tiers and links, and a user stays on one node") {
  const auto dir = temp_dir("tiers_fleet");
  SmallTrace t;
  t.users = 40;
  t.requests = 600;
  t.rate = 200;
  const auto trace = small_trace(dir, "trace", t);
  for (const char* router : {"least_loaded", "round_robin", "user_affinity"}) {
    INFO(router);
    const std::string yaml = tiny_config(
        trace,
        std::string(kStressBody) +
            "node: {name: two, gpus: 2, dram: 1MiB, nvme_drives: 1,"
            " nvme_drive_capacity: 1MiB}\nnodes: 3\n" +
            "router: " + router + "\n" +
            "store:\n  gpu: {capacity: 12KiB}\n  host: {capacity: 16KiB, async_loads: true}\n"
            "  disk: {capacity: 24KiB, read_gbps: 0.001, write_gbps: 0.001, latency_us: 50,"
            " queue_depth: 2}\n"
            "  remote: {capacity: 1MiB, gbps: 0.002, latency_us: 100}\n");
    const auto runs = run_yaml(dir, yaml);
    REQUIRE(runs.size() == 1);
    const RunSummary& s = runs[0].summary;
    CHECK(runs[0].config.replicas == 6);
    CHECK(runs[0].config.nodes == 3);
    CHECK(s.requests == 600);
    // Every tier stayed within its capacity (per node; the remote store is one).
    CHECK(s.tiers[1].peak_bytes <= 16u * 1024);
    CHECK(s.tiers[2].peak_bytes <= 24u * 1024);
    CHECK(s.tiers[3].peak_bytes <= 1u << 20);
    CHECK(s.tiers[1].capacity_bytes == 3u * 16 * 1024);  // one host tier per node
    CHECK(s.tiers[3].capacity_bytes == 1u << 20);        // one remote store
    // What each tier served went over its own link, and a link never ran past the run.
    CHECK(s.links[0].bytes == s.tiers[2].bytes_out);
    CHECK(s.links[2].bytes == s.tiers[3].bytes_out);
    CHECK(s.links[1].bytes == s.tiers[2].bytes_in);
    CHECK(s.links[3].bytes == s.tiers[3].bytes_in);
    CHECK(s.tiers[2].hits > 0);
    CHECK(s.tiers[3].hits > 0);
    for (const LinkSummary& l : s.links) CHECK(l.busiest_fraction <= 1.0);
    // A user's requests all ran on one node (replicas 2n and 2n + 1).
    std::map<std::string, std::set<int>> nodes_of;
    for (const auto& row : read_csv(std::filesystem::path(runs[0].dir) / "requests.csv")) {
      nodes_of[row[1]].insert(std::stoi(row[2]) / 2);
    }
    CHECK(nodes_of.size() > 10);
    for (const auto& [user, nodes] : nodes_of) CHECK(nodes.size() == 1);
  }
}

namespace {

std::string tiers_error(const std::string& name, const std::string& yaml) {
  const auto dir = temp_dir("tiers_error_" + name);
  const auto path = write_text(dir / "c.yaml", yaml);
  try {
    validate_experiment(load_experiment(path, {}));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("config errors of the fleet's keys carry their position and exit with status 2") {
  const std::string base =
      "experiment: e\ntrace: " + source_path("tests/sim/data/golden.jsonl") + "\n";
  const std::vector<ConfigErrorCase> cases = {
      {"host_over_dram", base + "node: hgx-h200-8\nstore:\n  host: {capacity: 3TB}\n",
       ":5:9: store.host", "larger than node 'hgx-h200-8' DRAM (2000.0 GB)"},
      {"disk_over_nvme", base + "node: hgx-h200-8\nstore:\n  disk: {capacity: 40TB}\n",
       ":5:9: store.disk", "larger than node 'hgx-h200-8' NVMe (30720.0 GB)"},
      {"negative_read_gbps",
       base + "store:\n  disk: {capacity: 1GB, read_gbps: -2, write_gbps: 1}\n",
       ":4:36: store.disk.read_gbps", "expected a number in [0,"},
      {"negative_remote_gbps", base + "store:\n  remote: {capacity: 1GB, gbps: -1}\n",
       ":4:33: store.remote.gbps", "expected a number in [0,"},
      {"no_disk_bandwidth", base + "store:\n  disk: {capacity: 1GB}\n", ":4:9: store.disk",
       "needs positive read_gbps and write_gbps"},
      {"write_without_below", base + "store:\n  host: {capacity: 1GB, write: back}\n",
       ":4:32: store.host.write", "needs an enabled tier below it"},
      {"gpu_through_alone", base + "store:\n  gpu: {capacity: 1GB, write: through}\n",
       ":4:31: store.gpu.write", "needs an enabled tier below it"},
      {"unknown_node", base + "node: dgx-z9\n", ":3:7: node", "presets: hgx-h100-8"},
      {"node_gpu_mismatch", base + "node: hgx-h200-8\ngpu: h100\n", ":4:6: gpu",
       "has h200 GPUs, not h100"},
      {"replicas_vs_nodes", base + "node: hgx-h200-8\nnodes: 2\nreplicas: 3\n", ":5:11: replicas",
       "2 nodes of 8 replicas are 16 replicas, not 3"},
      {"unknown_dtype", base + "store: {kv_dtype: fp4}\n", ":3:19: store.kv_dtype",
       "expected one of bf16, fp8, int8"},
      {"shared_host_real_executor",
       base + "node: hgx-h200-8\nexecutor: {kind: remote, endpoints: [127.0.0.1:7070]}\n"
              "store:\n  host: {capacity: 1TB}\n",
       ":3:7: node", "keeps host copies per replica"},
      {"through_real_executor",
       base + "executor: {kind: remote, endpoints: [127.0.0.1:7070]}\nstore:\n"
              "  gpu: {capacity: 1GB, write: through}\n  host: {capacity: 1GB}\n",
       ":5:31: store.gpu.write", "offloads only evicted facts"},
  };
  check_config_errors(cases, tiers_error);
  // And the command line prints it on one line and exits with status 2.
  const auto dir = temp_dir("tiers_cli");
  const auto cfg = write_text(dir / "bad.yaml", base +
                                                    "store:\n  disk: {capacity: 1GB, "
                                                    "read_gbps: -2, write_gbps: 1}\n");
  CHECK(run_cli("validate " + cfg, dir / "out.txt") == 2);
  CHECK(read_text(dir / "out.txt").find("bad.yaml:4:36: store.disk.read_gbps") !=
        std::string::npos);
}

TEST_CASE("summary.json prices the fleet: GPUs by the hour, tiers by their capacity") {
  const auto dir = temp_dir("tiers_cost");
  const std::string base =
      "experiment: e\nmodel: llama-3.1-8b\nnode: hgx-h200-8\nnodes: 1\n"
      "trace: " +
      source_path("tests/sim/data/golden.jsonl") +
      "\nstore:\n  host: {capacity: 1000GB}\n"
      "  remote: {capacity: 10000GB}\n";
  const auto runs = run_yaml(dir, base +
                                      "runs:\n  - name: presets\n"
                                      "  - {name: set, prices: {gpu_per_hour: 2.5, source: "
                                      "quote}, store: {host: {price_per_gb_month: 0.5}}}\n");
  REQUIRE(runs.size() == 2);
  const auto presets = summary_of(runs[0])["cost_usd"];
  const auto set = summary_of(runs[1])["cost_usd"];
  // configs/gpus/h200.yaml: $4.00 a GPU-hour; configs/nodes/hgx-h200-8.yaml: DRAM $0.125 and
  // the remote store $0.25 a GB-month; a month is 730 hours.
  CHECK(presets["gpus"] == 8);
  CHECK(presets["per_hour"].get<double>() ==
        Approx(8 * 4.00 + 1000 * 0.125 / 730 + 10000 * 0.25 / 730).epsilon(1e-12));
  CHECK(presets["gpu_source"].get<std::string>().find("Mercatus") != std::string::npos);
  CHECK(presets["tiers"]["host"]["source"].get<std::string>().find("assumed") != std::string::npos);
  CHECK(set["per_hour"].get<double>() ==
        Approx(8 * 2.5 + 1000 * 0.5 / 730 + 10000 * 0.25 / 730).epsilon(1e-12));
  CHECK(set["gpu_source"] == "quote");
  const RunSummary& s = runs[1].summary;
  REQUIRE(s.requests > 0);
  CHECK(set["per_million_requests"].get<double>() ==
        Approx(set["per_hour"].get<double>() * s.makespan_s / 3600 / double(s.requests) * 1e6)
            .epsilon(1e-9));
}

TEST_CASE("a run with every tier is deterministic and the same on the general path") {
  const auto dir = temp_dir("tiers_same");
  SmallTrace t;
  t.users = 30;
  t.requests = 400;
  t.rate = 150;
  const auto trace = small_trace(dir, "trace", t);
  const std::string yaml = tiny_config(
      trace, std::string(kStressBody) +
                 "node: {name: two, gpus: 2, dram: 1MiB, nvme_drives: 1,"
                 " nvme_drive_capacity: 1MiB}\nnodes: 2\n"
                 "store:\n  kv_dtype: fp8\n  gpu: {capacity: 12KiB, write: through}\n"
                 "  host: {capacity: 16KiB, eviction: fifo}\n"
                 "  disk: {capacity: 24KiB, read_gbps: 0.001, write_gbps: 0.001, latency_us: 50}\n"
                 "  remote: {capacity: 1MiB, gbps: 0.002, latency_us: 100}\n"
                 "runs:\n  - {name: a}\n  - {name: b}\n  - {name: general, fast_paths: false}\n");
  const auto runs = run_yaml(dir, yaml);
  REQUIRE(runs.size() == 3);
  const auto csv = [&](int i) {
    return read_text(std::filesystem::path(runs[i].dir) / "requests.csv");
  };
  CHECK(csv(0) == csv(1));
  CHECK(csv(0) == csv(2));
  CHECK(runs[0].summary.tiers[2].bytes_in == runs[2].summary.tiers[2].bytes_in);
  CHECK(runs[0].summary.tiers[3].load_wait_ns == runs[2].summary.tiers[3].load_wait_ns);
  // Write-through: every encode placed on the GPU reached a tier below at once.
  CHECK(runs[0].summary.tiers[1].writes > 0);
  CHECK(runs[0].summary.tiers[0].drops == 0);
}
