// Whole-run properties: completion exactly once, budgets and memory never exceeded, determinism.
#include <map>
#include <set>

#include "executor/cost_model/cost_model.h"
#include "sim/config/experiment.h"
#include "sim/executor_factory.h"
#include "sim/runner.h"
#include "tests/catch.h"
#include "tests/sim/sim_test_util.h"
#include "tests/sim/small_trace.h"
#include "traces/synthetic.h"
#include "traces/writer.h"

using namespace inferscale;
using namespace inferscale::test;

namespace {

/// A small synthetic trace: `users` users, `requests` requests, memory writes during the run.
std::string make_trace(const std::filesystem::path& dir, std::uint64_t seed, double rate,
                       std::uint32_t live_sessions = 2) {
  SmallTrace t;
  t.seed = seed;
  t.rate = rate;
  t.users = 40;
  t.requests = 600;
  t.live_sessions = live_sessions;
  return small_trace(dir, "trace", t);
}

std::vector<RunOutcome> run(const std::filesystem::path& dir, const std::string& yaml) {
  const auto exp = load_experiment(write_text(dir / "exp.yaml", yaml), {});
  RunnerOptions opts;
  opts.out_dir = (dir / "results").string();
  opts.progress = false;
  return run_experiment(exp, opts);
}

/// Tight memory, a small store and a small token budget: preemptions, evictions, chunked
/// prefill, encodes of misses and of memory writes all happen.
const std::string kStress =
    std::string(kStressBody) +
    "store: {gpu: {capacity: 24KiB, eviction: lru}, host: {capacity: 32KiB, eviction: fifo}}\n";

/// Executor kind `plan_check`: prices steps with the cost model and follows each replica's pool
/// and host tier through the plans as a real executor would, recording every plan it could not
/// perform (a fact injected that the pool does not hold, a load the host tier does not hold, an
/// offload or eviction of a fact that is not resident, a placement past the pool's capacity).
std::vector<std::string> plan_errors;
std::uint64_t private_items = 0;  // per-request loads and encodes seen
std::uint64_t async_loads_seen = 0;
std::uint64_t steps_beside_copies = 0;  // steps that computed while an asynchronous copy ran

class PlanCheckExecutor final : public Executor {
 public:
  explicit PlanCheckExecutor(const RunConfig& run)
      : inner_(CostModel(run.model, CostRates::from_gpu(run.gpu))),
        prices_(run.model, CostRates::from_gpu(run.gpu)),
        capacity_blocks_(run.store.gpu.capacity_bytes /
                         (kBlockTokens * run.model.kv_bytes_per_token())) {}
  BatchResult execute(const BatchPlan& plan) override {
    auto fail = [&](const std::string& what, FactId f) {
      plan_errors.push_back("replica " + std::to_string(plan.replica) + " at " +
                            std::to_string(plan.now) + ": " + what + " " + std::to_string(f));
    };
    auto place = [&](FactId f, std::uint32_t tokens) {
      const std::uint64_t blocks = (tokens + kBlockTokens - 1) / kBlockTokens;
      if (used_blocks_ + blocks > capacity_blocks_) fail("the pool has no room for", f);
      used_blocks_ += blocks;
      pool_[f] = blocks;
    };
    for (const auto* list : {&plan.offloads, &plan.async_offloads}) {
      for (const FactLoad& o : *list) {
        if (!pool_.count(o.fact)) fail("offload of a fact not in the pool:", o.fact);
        host_.insert(o.fact);
      }
    }
    for (FactId f : plan.evictions) {
      const auto it = pool_.find(f);
      if (it == pool_.end()) {
        fail("eviction of a fact not in the pool:", f);
      } else {
        used_blocks_ -= it->second;
        pool_.erase(it);
      }
    }
    auto check_private = [&](RequestId r, std::uint32_t position, std::uint32_t tokens,
                             std::uint32_t prompt_tokens, FactId f) {
      if (r != kNoRequest) ++private_items;
      if (r != kNoRequest && position + tokens > prompt_tokens) {
        fail("per-request KV past its prompt_tokens:", f);
      }
    };
    for (const FactLoad& l : plan.loads) {
      check_private(l.for_request, l.position, l.tokens, l.prompt_tokens, l.fact);
      if (!host_.count(l.fact)) fail("load of a fact not in the host tier:", l.fact);
      if (l.for_request == kNoRequest) place(l.fact, l.tokens);
    }
    // Asynchronous loads: the copy engine runs them one after another, each priced as the
    // simulator prices it; the fact may be injected once its copy is done.
    for (const FactLoad& l : plan.async_loads) {
      ++async_loads_seen;
      if (l.for_request != kNoRequest) fail("asynchronous load for a request:", l.fact);
      if (!host_.count(l.fact)) fail("asynchronous load of a fact not in the host tier:", l.fact);
      place(l.fact, l.tokens);
      copy_free_ = std::max(copy_free_, plan.now) + prices_.load_cost_ns(l.bytes);
      ready_[l.fact] = copy_free_;
    }
    if (copy_free_ > plan.now && (!plan.decodes.empty() || !plan.prefills.empty())) {
      ++steps_beside_copies;
    }
    for (FactId f : plan.host_evictions) {
      if (host_.erase(f) == 0) fail("host eviction of a fact not in the host tier:", f);
    }
    for (const FactEncode& e : plan.encodes) {
      if (!e.store) check_private(e.for_request, e.position, e.tokens, e.prompt_tokens, e.fact);
      if (e.store) place(e.fact, e.tokens);
    }
    for (const PrefillItem& p : plan.prefills) {
      if (!p.first_chunk) continue;
      for (std::uint32_t i = p.facts_begin; i < p.facts_end; ++i) {
        const PromptFact& f = plan.prompt_facts[i];
        if (f.inject && !f.private_kv && !pool_.count(f.fact)) {
          fail("request " + std::to_string(p.request) + " injects a fact not in the pool:", f.fact);
        }
        const auto r = ready_.find(f.fact);
        if (f.inject && r != ready_.end() && r->second > plan.now) {
          fail("request " + std::to_string(p.request) +
                   " injects a fact before its asynchronous load is done:",
               f.fact);
        }
      }
    }
    return inner_.execute(plan);
  }
  std::string name() const override { return "plan_check"; }

 private:
  CostModelExecutor inner_;
  CostModel prices_;
  std::uint64_t capacity_blocks_, used_blocks_ = 0;
  SimTime copy_free_ = 0;
  std::map<FactId, SimTime> ready_;       // when each asynchronous load is done
  std::map<FactId, std::uint64_t> pool_;  // resident facts and their blocks
  std::set<FactId> host_;
};

const bool kPlanCheckRegistered = register_executor_kind(
    "plan_check",
    [](const RunConfig& run, int) { return std::make_unique<PlanCheckExecutor>(run); },
    [](const RunConfig&) {});

}  // namespace

TEST_CASE("stress run: every request completes once, and budget, KV memory and store hold") {
  const auto dir = temp_dir("stress");
  const auto trace = make_trace(dir, 3, 5000);
  for (const char* mode : {"text", "kv_inject"}) {
    for (const char* router : {"user_affinity", "least_loaded", "round_robin"}) {
      INFO(mode << " " << router);
      const auto outcomes = run(
          dir, tiny_config(trace, std::string(kStress) + "replicas: 3\nrouter: " + router +
                                      "\nruns:\n  - name: r\n    serving: {mode: " + mode + "}\n"));
      const auto& s = outcomes.at(0).summary;
      const auto rows = read_csv(std::filesystem::path(outcomes[0].dir) / "requests.csv");
      std::set<std::string> ids;
      for (const auto& r : rows) ids.insert(r[0]);
      CHECK(rows.size() == 600);
      CHECK(ids.size() == 600);
      CHECK(s.max_batch_tokens_seen <= 96);
      CHECK(s.max_kv_blocks_used <= s.kv_blocks_total);
      CHECK(s.store_peak_bytes <= 24 * 1024);
      for (const auto& r : rows) {
        CHECK(std::stod(r[6]) > 0);                 // ttft
        CHECK(std::stod(r[4]) >= std::stod(r[3]));  // first_token >= arrival
        CHECK(std::stod(r[5]) >= std::stod(r[4]));  // finish >= first_token
      }
      if (std::string(mode) == "kv_inject") {
        CHECK(s.preemptions > 0);  // the memory is tight on purpose
        CHECK(s.misses > 0);
        CHECK(s.gpu_hits > 0);
        CHECK(s.memory_write_encodes > 0);
      }
    }
  }
}

TEST_CASE("every plan of a stressed run can be performed: injected facts are in the pool") {
  // A request's load from the host tier may evict to make room; it must not evict a fact the
  // same request injects from the pool (it once did: GPU hits were pinned after earlier loads).
  const auto dir = temp_dir("plans");
  private_items = 0;
  // 2 KiB: the GPU store holds 8 blocks, fewer than a forward of max_batch_tokens may encode
  // (the preload of host-tier facts must pass through the pool in smaller forwards).
  for (std::uint64_t seed : {3, 4}) {
    for (const char* miss : {"encode", "text"}) {
      const char* gpu_store = seed == 3 ? "24KiB" : "2KiB";
      INFO("seed " << seed << ", miss_path " << miss << ", GPU store " << gpu_store);
      plan_errors.clear();
      const auto outcomes =
          run(dir, tiny_config(make_trace(dir, seed, 5000),
                               std::string(kStress) +
                                   "executor: {kind: plan_check}\nruns:\n  - name: r\n"
                                   "    serving: {mode: kv_inject, miss_path: " +
                                   miss +
                                   "}\n"
                                   "    store: {gpu: {capacity: " +
                                   gpu_store + "}}\n"));
      const auto& s = outcomes.at(0).summary;
      CHECK(s.loads > 0);
      CHECK(s.gpu_hits > 0);
      INFO((plan_errors.empty() ? std::string() : plan_errors.front()));
      CHECK(plan_errors.empty());
    }
  }
  CHECK(private_items > 0);  // per-request loads or encodes occurred, and were checked
}

TEST_CASE("asynchronous host loads: prefills wait for their copies, which run beside compute") {
  const auto dir = temp_dir("async_loads");
  for (std::uint64_t seed : {3, 4}) {
    for (const char* router : {"user_affinity", "least_loaded"}) {
      INFO("seed " << seed << ", router " << router);
      plan_errors.clear();
      async_loads_seen = 0;
      steps_beside_copies = 0;
      std::string stress = kStress;  // its host tier, with asynchronous loads
      const std::string fifo = "eviction: fifo}}";
      stress.replace(stress.find(fifo), fifo.size(), "eviction: fifo, async_loads: true}}");
      const auto outcomes =
          run(dir, tiny_config(make_trace(dir, seed, 5000),
                               stress + "replicas: 2\nrouter: " + router +
                                   "\nexecutor: {kind: plan_check}\nruns:\n  - name: r\n"
                                   "    serving: {mode: kv_inject}\n"));
      const auto& s = outcomes.at(0).summary;
      const auto rows = read_csv(std::filesystem::path(outcomes[0].dir) / "requests.csv");
      std::set<std::string> ids;
      for (const auto& r : rows) ids.insert(r[0]);
      CHECK(ids.size() == 600);
      CHECK(s.max_kv_blocks_used <= s.kv_blocks_total);
      CHECK(s.store_peak_bytes <= 24 * 1024);
      CHECK(async_loads_seen > 0);
      CHECK(steps_beside_copies > 0);
      INFO((plan_errors.empty() ? std::string() : plan_errors.front()));
      CHECK(plan_errors.empty());
    }
  }
}

TEST_CASE("asynchronous host loads: a replica left idle by its loads wakes when they are done") {
  // A step's end that leaves only requests waiting for their copies must still wake the replica
  // (it once did only when the replica was idle at a kick, and runs ended with requests never
  // completed); slow arrivals and several replicas make such idle gaps common.
  const auto dir = temp_dir("async_wake");
  std::string stress = kStress;
  const std::string fifo = "eviction: fifo}}";
  stress.replace(stress.find(fifo), fifo.size(), "eviction: lru, async_loads: true}}");
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    for (const double rate : {30.0, 3000.0}) {
      const std::string trace = make_trace(dir, 20 + seed, rate);
      for (int replicas = 1; replicas <= 4; ++replicas) {
        INFO("seed " << seed << ", rate " << rate << ", replicas " << replicas);
        const auto outcomes =
            run(dir, tiny_config(trace, stress + "replicas: " + std::to_string(replicas) +
                                            "\nrouter: least_loaded\n"));
        const auto rows = read_csv(std::filesystem::path(outcomes.at(0).dir) / "requests.csv");
        CHECK(rows.size() == 600);
      }
    }
  }
}

TEST_CASE("same seed gives byte-identical requests.csv, another seed differs") {
  const auto dir = temp_dir("determinism");
  const auto trace = make_trace(dir, 5, 300);
  const std::string yaml =
      tiny_config(trace, std::string(kStress) + "replicas: 2\nrouter: least_loaded\n");
  const auto a = read_text(std::filesystem::path(run(dir, yaml).at(0).dir) / "requests.csv");
  const auto b = read_text(std::filesystem::path(run(dir, yaml).at(0).dir) / "requests.csv");
  CHECK(a.size() > 1000);
  CHECK(a == b);
  const auto other = make_trace(dir, 6, 300);
  const auto c = read_text(
      std::filesystem::path(
          run(dir, tiny_config(other, std::string(kStress) + "replicas: 2\n")).at(0).dir) /
      "requests.csv");
  CHECK(a != c);
}

TEST_CASE("kv_inject prefills less and answers sooner than text at k=8") {
  const auto dir = temp_dir("modes");
  const auto trace = make_trace(dir, 9, 50, 0);
  const auto outcomes =
      run(dir, tiny_config(trace,
                           "gpu: {name: g, memory: 1GiB, bf16_tflops: 0.001, hbm_gbps: 100,"
                           " pcie_gbps: 10, step_overhead_us: 10}\n"
                           "serving: {k: 8, header_tokens: 16}\n"
                           "store: {gpu: {capacity: 10%}}\n"
                           "runs:\n  - name: text\n    serving: {mode: text}\n"
                           "  - name: kv\n    serving: {mode: kv_inject}\n"));
  const auto& text = outcomes.at(0).summary;
  const auto& kv = outcomes.at(1).summary;
  CHECK(kv.prefill_tokens < text.prefill_tokens);
  CHECK(kv.ttft_ms.p50 < text.ttft_ms.p50);
  CHECK(kv.gpu_hits == kv.lookups);  // warm store, everything fits
}

TEST_CASE("offline policies see the trace's future in a run: Belady hits at least as often") {
  // With no future (as before the runner passed one), Belady bypasses every insertion and hits
  // no more often than a store that never evicts, well below the online policies.
  const auto dir = temp_dir("offline");
  const auto trace = make_trace(dir, 11, 50, 0);
  std::string yaml =
      "gpu: {name: g, memory: 1GiB, bf16_tflops: 0.001, hbm_gbps: 100, pcie_gbps: 10,"
      " step_overhead_us: 10}\n"
      "serving: {mode: kv_inject, k: 8, header_tokens: 16}\n"
      "store: {gpu: {capacity: 24KiB}}\n"
      "runs:\n";
  const std::vector<std::string> policies{"belady", "lru", "fifo", "s3fifo", "gdsf", "unbounded"};
  for (const auto& p : policies)
    yaml += "  - {name: " + p + ", store: {gpu: {eviction: " + p + "}}}\n";
  const auto outcomes = run(dir, tiny_config(trace, yaml));
  REQUIRE(outcomes.size() == policies.size());
  const auto hits = [&](std::size_t i) { return outcomes[i].summary.gpu_hits; };
  INFO("belady " << hits(0) << ", lru " << hits(1) << ", unbounded " << hits(5));
  CHECK(outcomes[0].summary.lookups == outcomes[1].summary.lookups);
  for (std::size_t i = 1; i < policies.size(); ++i) {
    INFO(policies[i] << ": " << hits(i));
    CHECK(hits(0) >= hits(i));
  }
  CHECK(hits(0) > hits(5));
}
