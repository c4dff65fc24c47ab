// A generated trace streamed into the simulator, or read from the binary format, (facts derived per
// user when first needed) gives the same requests.csv, byte for byte, as the same trace written to
// JSONL and read back; and `trace: {generate: ...}` writes no trace file unless asked to.
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "sim/config/experiment.h"
#include "sim/executor_factory.h"
#include "sim/simulator.h"
#include "tests/catch.h"
#include "tests/sim/same_run.h"
#include "tests/sim/sim_test_util.h"
#include "traces/binary_trace.h"
#include "traces/synthetic.h"
#include "traces/writer.h"

namespace fs = std::filesystem;
using namespace inferscale;
using namespace inferscale::test;

namespace {

// kStressBody without its serving line (each case sets its own), a budget that fits CWE encodes.
constexpr const char* kGpuAndScheduler =
    "gpu: {name: small, memory: 60KiB, bf16_tflops: 1, hbm_gbps: 1, pcie_gbps: 1,"
    " step_overhead_us: 100}\n"
    "scheduler: {max_batch_tokens: 192, max_seqs: 16}\n";

SyntheticOptions population(std::uint32_t live_sessions, bool closed_loop,
                            std::uint64_t users = 60) {
  SyntheticOptions o;
  o.users = users;
  o.requests = 400;
  o.facts_per_user = 12;
  o.facts_per_user_spread = 4;
  o.sessions_min = 3;
  o.sessions_max = 6;
  o.live_sessions = live_sessions;
  o.k = 8;
  o.context_turns = 3;
  o.arrival.rate_per_s = 200;
  if (closed_loop) {
    o.arrival.mode = ArrivalMode::kClosedLoop;
    o.arrival.concurrency = 8;
  }
  o.seed = 7;
  return o;
}

Outcome simulate_stream(const RunConfig& run, const SyntheticOptions& o, bool lazy,
                        const fs::path& csv, bool fuse) {
  SimOutputs out;
  out.requests_csv = csv.string();
  out.progress = false;
  out.fuse_quiet_steps = fuse;
  Simulator sim(
      run, [o, lazy] { return std::make_unique<SyntheticStream>(o, lazy); },
      [&run](int i) { return make_executor(run, i); }, {}, out);
  Outcome r;
  r.summary = sim.run();
  r.csv = read_text(csv);
  return r;
}

}  // namespace

TEST_CASE("a streamed generated trace gives the requests.csv of the written one") {
  const auto dir = temp_dir("streamed");
  const std::string stores[] = {
      "serving: {k: 8, header_tokens: 16, footer_tokens: 4, cwe_window: 2, turn_tokens: 10, "
      "mode: kv_inject}\n"
      "store: {gpu: {capacity: 3KiB, eviction: lru}}\n",
      "serving: {k: 8, header_tokens: 16, mode: kv_inject}\n"
      "store: {gpu: {capacity: 2KiB, eviction: lfu}, host: {capacity: 6KiB, eviction: lru}}\n",
      "serving: {k: 8, mode: kv_inject, miss_path: text}\n"
      "store: {gpu: {capacity: 4KiB, eviction: w_tinylfu}}\n",
      "serving: {k: 8, mode: text}\n",
  };
  int case_no = 0;
  for (const std::uint32_t live : {0u, 2u}) {
    for (const bool closed : {false, true}) {
      if (live > 0 && closed) continue;  // memory writes need open-loop arrivals
      const SyntheticOptions o = population(live, closed);
      const std::string trace = (dir / ("t" + std::to_string(case_no++) + ".jsonl")).string();
      {
        TraceWriter w(trace);
        generate_synthetic(o, w);
        w.close();
      }
      const std::string binary = trace + ".bin";
      convert_trace(trace, binary);
      for (const auto& warm_store : stores) {
        for (const bool warm : {true, false}) {
          // A warm store is filled in the trace's order: facts are then declared eagerly (the
          // runner does so), and lazily only without it.
          std::string store = warm_store;
          if (!warm && store.find("store: {") != std::string::npos) {
            store.replace(store.find("store: {"), 8, "store: {warm: false, ");
          }
          for (const bool fuse : {false, true}) {
            INFO("live " << live << ", closed " << closed << ", fuse " << fuse << "\n" << store);
            const auto exp = load_experiment(
                write_text(dir / "e.yaml",
                           tiny_config(trace, kGpuAndScheduler + std::string("replicas: 3\n") +
                                                  store + "runs:\n  - name: r\n")),
                {});
            const RunConfig& run = exp.runs.at(0);
            const Outcome file = simulate(run, trace, dir / "file.csv", fuse);
            const Outcome eager = simulate_stream(run, o, false, dir / "eager.csv", fuse);
            REQUIRE(file.summary.requests == o.requests);
            CHECK(eager.csv == file.csv);
            CHECK(simulate(run, binary, dir / "binary.csv", fuse).csv == file.csv);
            if (warm && run.serving.mode == ServingMode::kKvInject) continue;
            const Outcome lazy = simulate_stream(run, o, true, dir / "lazy.csv", fuse);
            CHECK(lazy.csv == file.csv);
            check_same_summary(lazy.summary, file.summary);
            CHECK(lazy.summary.facts == file.summary.facts);
          }
        }
      }
    }
  }
}

TEST_CASE("lazily declared facts are the eagerly generated ones") {
  for (const std::uint32_t live : {0u, 2u}) {
    const SyntheticOptions o = population(live, false, 1000);
    // Eager: every fact record by id; lazy must declare the same records (same fields).
    std::map<FactId, std::pair<FactRecord, bool>> eager_facts;
    SyntheticStream eager(o, false);
    TraceRecord rec;
    std::vector<RequestRecord> eager_requests;
    while (eager.next(rec)) {
      if (rec.kind == RecordKind::kFact || rec.kind == RecordKind::kMemoryWrite) {
        eager_facts[rec.fact.id] = {rec.fact, rec.kind == RecordKind::kMemoryWrite};
      } else if (rec.kind == RecordKind::kRequest) {
        eager_requests.push_back(rec.request);
      }
    }
    SyntheticStream lazy(o, true);
    std::vector<FactId> declared;  // by dense index
    std::size_t requests = 0, facts = 0;
    std::set<UserId> asked;
    while (lazy.next(rec)) {
      if (rec.kind == RecordKind::kFact || rec.kind == RecordKind::kMemoryWrite) {
        const auto& [f, write] = eager_facts.at(rec.fact.id);
        CHECK(write == (rec.kind == RecordKind::kMemoryWrite));
        CHECK(f.user == rec.fact.user);
        CHECK(f.tokens == rec.fact.tokens);
        CHECK(f.session == rec.fact.session);
        CHECK(f.context_tokens == rec.fact.context_tokens);
        CHECK(f.time == rec.fact.time);
        declared.push_back(rec.fact.id);
        ++facts;
      } else if (rec.kind == RecordKind::kRequest) {
        const auto& e = eager_requests.at(requests++);
        CHECK(e.id == rec.request.id);
        CHECK(e.user == rec.request.user);
        CHECK(e.time == rec.request.time);
        CHECK(e.facts == rec.request.facts);
        asked.insert(rec.request.user);
        // Every fact a request names was declared, with the dense index the stream reports.
        for (std::size_t i = 0; i < rec.request.facts.size(); ++i) {
          const std::uint32_t dense = lazy.request_fact_indices()[i];
          REQUIRE(dense < declared.size());
          CHECK(declared[dense] == rec.request.facts[i]);
          CHECK(lazy.dense_of(rec.request.facts[i]) == dense);
        }
      }
    }
    CHECK(requests == eager_requests.size());
    CHECK(lazy.population_facts() == eager_facts.size());
    CHECK(lazy.facts_declared() == facts);
    if (live == 0) CHECK(asked.size() < o.users);  // some users never ask: none of their facts
    if (live == 0) CHECK(facts < eager_facts.size());
  }
}

TEST_CASE("trace: {generate: ...} writes no trace unless write_trace is set") {
  const auto dir = temp_dir("generate_no_file");
  const std::string body =
      "trace: {generate: {users: 50, requests: 300, k: 8, rate: 50, WRITE}}\n"
      "serving: {k: 8, mode: kv_inject}\n"
      "store: {gpu: {capacity: 30%}, host: {capacity: 1GB}}\n"
      "runs:\n  - name: kv\n  - name: cold\n    store: {warm: false}\n";
  const auto config = [&](const std::string& write) {
    std::string b = body;
    b.replace(b.find("WRITE"), 5, write);
    return "experiment: e\nseed: 3\nmodel: llama-3.1-8b\ngpu: h200\n" + b;
  };
  const auto streamed = dir / "streamed", written = dir / "written";
  REQUIRE(run_cli("run " + write_text(dir / "a.yaml", config("write_trace: false")) + " --out " +
                      streamed.string() + " --no-progress",
                  dir / "a.log") == 0);
  REQUIRE(run_cli("run " + write_text(dir / "b.yaml", config("write_trace: true")) + " --out " +
                      written.string() + " --no-progress",
                  dir / "b.log") == 0);
  CHECK_FALSE(fs::exists(streamed / "e" / ".traces"));
  CHECK(fs::exists(written / "e" / ".traces"));
  for (const char* run : {"kv", "cold"}) {  // facts declared at t=0, and lazily
    INFO(run);
    const std::string a = read_text(streamed / "e" / run / "requests.csv");
    CHECK(a.size() > 1000);
    CHECK(a == read_text(written / "e" / run / "requests.csv"));
  }
  CHECK(read_text(streamed / "e" / "kv" / "requests.csv") !=
        read_text(streamed / "e" / "cold" / "requests.csv"));
}

TEST_CASE("replica-local fact and user records decide as the tables by id") {
  const auto dir = temp_dir("compact_ids");
  const SyntheticOptions o = population(2, false);
  const std::string trace = (dir / "t.jsonl").string();
  {
    TraceWriter w(trace);
    generate_synthetic(o, w);
    w.close();
  }
  const std::string stores[] = {
      "store: {gpu: {capacity: 3KiB, eviction: lru}}\n",  // direct LRU when not compact
      "store: {gpu: {capacity: 2KiB, eviction: lru}, host: {capacity: 6KiB, eviction: lru}}\n",
      // Two replicas a node: the node's ids are its own (one replica: that replica's).
      "node: {name: two, gpus: 2, dram: 1MiB}\n"
      "store: {gpu: {capacity: 2KiB, eviction: lru}, host: {capacity: 6KiB, eviction: lru}}\n",
      "store: {warm: false, gpu: {capacity: 2KiB, eviction: s3fifo}, host: {capacity: 6KiB}}\n",
      "store: {gpu: {capacity: 4KiB, eviction: w_tinylfu}}\n",
  };
  for (const auto& store : stores) {
    for (const char* router : {"user_affinity", "least_loaded"}) {
      INFO(store << router);
      const auto exp = load_experiment(
          write_text(dir / "e.yaml",
                     tiny_config(trace, kGpuAndScheduler + std::string("replicas: 4\nrouter: ") +
                                            router + "\nserving: {k: 8, mode: kv_inject}\n" +
                                            store + "runs:\n  - name: r\n")),
          {});
      const RunConfig& run = exp.runs.at(0);
      std::string csv[2];
      RunSummary summary[2];
      for (int compact = 0; compact < 2; ++compact) {
        SimOutputs out;
        out.requests_csv = (dir / ("c" + std::to_string(compact) + ".csv")).string();
        out.progress = false;
        out.fuse_quiet_steps = true;
        out.compact_ids = compact;
        Simulator sim(
            run, trace, [&run](int i) { return make_executor(run, i); }, {}, out);
        summary[compact] = sim.run();
        csv[compact] = read_text(out.requests_csv);
      }
      REQUIRE(summary[0].requests == o.requests);
      CHECK(csv[0] == csv[1]);
      check_same_summary(summary[0], summary[1]);
      // Tables by id keep every fact seen; compact records with slot-id policies (LRU) free the
      // facts in no tier, so that what is left matches what the tiers hold.
      CHECK(summary[0].local_facts_freed == 0);
      const bool frees =
          store.find("s3fifo") == std::string::npos && store.find("w_tinylfu") == std::string::npos;
      const bool host = store.find("host") != std::string::npos;
      // A node of one replica whose records are freed names facts by that replica's records,
      // which then also hold what the host tier holds.
      const bool shared = frees && host && store.find("gpus: 2") == std::string::npos;
      if (frees) {
        const std::uint64_t held =
            summary[1].resident_facts + (shared ? summary[1].node_resident_facts : 0);
        CHECK(summary[1].local_facts_freed > 0);
        CHECK(summary[1].local_facts <= held);
        CHECK(summary[1].local_facts * 2 >= held);
      } else {
        CHECK(summary[1].local_facts_freed == 0);
        CHECK(summary[1].local_facts > summary[1].resident_facts);
      }
      // The host tier's ids: every fact it ever saw without recycling, what it holds with it.
      if (host) {
        CHECK(summary[0].node_ids > summary[0].node_resident_facts);
        CHECK(summary[1].node_ids == summary[1].node_resident_facts);
        CHECK(summary[1].node_resident_facts > 0);
        CHECK((summary[1].node_id_records == 0) == shared);  // no id records of its own
      } else {
        CHECK(summary[1].node_ids == 0);
      }
    }
  }
}

TEST_CASE("compact records are chosen for big fleets and big known populations") {
  // The setting wins when given.
  CHECK(compact_records(1, 1, 0));
  CHECK_FALSE(compact_records(0, 1024, std::uint64_t{1} << 40));
  // Automatic: more than kCompactReplicas replicas...
  CHECK(compact_records(-1, kCompactReplicas + 1, 0));
  CHECK_FALSE(compact_records(-1, kCompactReplicas, 0));
  // ...or facts known beforehand times replicas past kCompactFactSlots (a warm store of a big
  // population on a few replicas), whatever the replicas.
  const std::uint64_t per_replica = kCompactFactSlots / 8;
  CHECK_FALSE(compact_records(-1, 8, per_replica));
  CHECK(compact_records(-1, 8, per_replica + 1));
  CHECK(compact_records(-1, 1, kCompactFactSlots + 1));
  // A trace that does not know its population (a file: 0 facts before the first record).
  CHECK_FALSE(compact_records(-1, 8, 0));
}
