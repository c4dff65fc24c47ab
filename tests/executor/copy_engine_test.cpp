// The asynchronous copy lanes of the calibrated executor (CopyEngineModel): batches of facts with
// a ticket each, loads after the offloads that free their blocks, the shared link while both
// lanes move, the host time to issue, and what a step's prefills wait for.

#include "executor/cost_model/copy_engine.h"
#include "executor/copy_order.h"
#include "executor/cost_model/calibrated.h"
#include "tests/catch.h"

using namespace inferscale;

namespace {

// One fact of this many bytes takes 1000 ns on a lane alone.
constexpr std::uint64_t kFactBytes = 1000;

CopyEngineParams params(double duplex = 1, double issue_ns = 0) {
  CopyEngineParams p;
  p.bytes_per_ns = 1.0;
  p.fact_ns = 0;
  p.duplex = duplex;
  p.issue_ns = issue_ns;
  p.batch_facts = 16;
  return p;
}

/// A plan that issues `offloads` asynchronous offloads of victims it evicts (facts 1000..; as
/// the simulator plans them) and `loads` asynchronous loads (facts 0..), and whose one first
/// chunk injects `inject`.
BatchPlan plan_of(std::size_t offloads, std::size_t loads, std::vector<FactId> inject,
                  SimTime now) {
  BatchPlan plan;
  plan.now = now;
  for (std::size_t i = 0; i < offloads; ++i) {
    plan.async_offloads.push_back(FactLoad{FactId(1000 + i), 8, kFactBytes});
    plan.evictions.push_back(FactId(1000 + i));
  }
  for (std::size_t i = 0; i < loads; ++i) {
    plan.async_loads.push_back(FactLoad{FactId(i), 8, kFactBytes});
  }
  if (!inject.empty()) {
    PrefillItem p;
    p.first_chunk = true;
    p.facts_begin = 0;
    for (FactId f : inject) plan.prompt_facts.push_back(PromptFact{f, 8, 0, true});
    p.facts_end = std::uint32_t(plan.prompt_facts.size());
    plan.prefills.push_back(p);
  }
  return plan;
}

/// A profile whose loads move 1 byte/ns, whose steps cost `step_ns`, whose host issues a copy in
/// 10 ns, and whose steps pay `stall_ns` beside moving copies.
CalibrationProfile lanes_profile(double step_ns, double stall_ns) {
  CalibrationProfile p;
  p.knee = KneeRates{1e15, 1e12, 1e9};  // P = 1 byte/ns
  p.coefficients[kFeatureStep] = step_ns;
  p.coefficients[kFeaturePcie] = 1;
  p.async_copies.issue_ns = 10;
  p.async_copies.stall_ns = stall_ns;
  return p;
}

}  // namespace

TEST_CASE("copy lanes: a prefill waits for the batch of 16 facts that holds its fact") {
  CopyEngineModel m(params());
  const BatchPlan issue = plan_of(0, 40, {}, 0);
  CHECK(m.issue(issue, 0) == 0);
  CHECK(m.pending_loads() == 40);
  // Fact 3 is in the first batch (facts 0-15), fact 20 in the second, fact 39 in the third.
  CopyEngineModel a(params()), b(params()), c(params());
  a.issue(issue, 0);
  b.issue(issue, 0);
  c.issue(issue, 0);
  CHECK(a.ready(plan_of(0, 0, {3}, 100), 100) == 16 * 1000);
  CHECK(b.ready(plan_of(0, 0, {20}, 100), 100) == 32 * 1000);
  CHECK(c.ready(plan_of(0, 0, {39, 1}, 100), 100) == 40 * 1000);
  // Done before the step starts: no wait; a fact not loaded: no wait.
  CHECK(a.ready(plan_of(0, 0, {5}, 50'000), 50'000) == 50'000);
  CHECK(a.ready(plan_of(0, 0, {7777}, 60'000), 60'000) == 60'000);
  // A wait forgets the loads up to its ticket.
  CHECK(c.pending_loads() == 0);
}

TEST_CASE("copy lanes: a load batch starts after the offloads that free its blocks") {
  // 16 victims offloaded, 16 loads into their blocks: one after the other.
  CopyEngineModel one(params());
  one.issue(plan_of(16, 16, {}, 0), 0);
  CHECK(one.ready(plan_of(0, 0, {0}, 0), 0) == 32 * 1000);
  // 32 and 32: the first load batch waits for the first offload batch only, then runs beside the
  // second offload batch.
  CopyEngineModel two(params());
  two.issue(plan_of(32, 32, {}, 0), 0);
  CHECK(two.ready(plan_of(0, 0, {0}, 0), 0) == 32 * 1000);
  CHECK(two.ready(plan_of(0, 0, {31}, 0), 0) == 48 * 1000);
  // 16 victims for 32 loads: the second load batch takes blocks free before the step and starts
  // at once (the load lane runs in order: it is done after the first).
  CopyEngineModel more(params());
  more.issue(plan_of(16, 32, {}, 0), 0);
  CHECK(more.ready(plan_of(0, 0, {0}, 0), 0) == 32 * 1000);
  CHECK(more.ready(plan_of(0, 0, {31}, 0), 0) == 48 * 1000);
}

TEST_CASE("copy lanes: only the offloads of evicted facts hold loads back") {
  // Offloads of facts that stay resident (a copy to the host only) free no blocks: the loads
  // run beside them from the start.
  BatchPlan keep = plan_of(16, 16, {}, 0);
  keep.evictions.clear();
  CopyEngineModel a(params());
  a.issue(keep, 0);
  CHECK(a.ready(plan_of(0, 0, {0}, 0), 0) == 16 * 1000);
  // Victims evicted without an offload come first: the first load batch takes their blocks and
  // starts at once; the second takes the offloaded victims' blocks and waits for their batch.
  BatchPlan mixed = plan_of(16, 32, {}, 0);
  std::vector<FactId> resident_victims;
  for (FactId f = 2000; f < 2016; ++f) resident_victims.push_back(f);
  mixed.evictions.insert(mixed.evictions.begin(), resident_victims.begin(), resident_victims.end());
  CopyEngineModel b(params());
  b.issue(mixed, 0);
  CHECK(b.ready(plan_of(0, 0, {0}, 0), 0) == 16 * 1000);
  CHECK(b.ready(plan_of(0, 0, {31}, 0), 0) == 32 * 1000);
}

TEST_CASE("copy lanes: both lanes moving share the link") {
  // At half rate while both move: offload batch 2 and load batch 1 take 32 facts' time together.
  CopyEngineModel half(params(0.5));
  half.issue(plan_of(32, 32, {}, 0), 0);
  CHECK(half.ready(plan_of(0, 0, {0}, 0), 0) == 48 * 1000);
  CHECK(half.ready(plan_of(0, 0, {31}, 0), 0) == 64 * 1000);
  // A lane alone keeps its rate.
  CopyEngineModel alone(params(0.5));
  alone.issue(plan_of(0, 32, {}, 0), 0);
  CHECK(alone.ready(plan_of(0, 0, {31}, 0), 0) == 32 * 1000);
}

TEST_CASE("copy lanes: a fact costs its bytes, fact_ns and block_ns per 16-token block") {
  CopyEngineParams p = params();
  p.fact_ns = 100;
  p.block_ns = 250;
  CopyEngineModel m(p);
  BatchPlan plan;
  // 13 tokens: one block; 17: two; 33: three.
  plan.async_loads = {FactLoad{1, 13, 1000}, FactLoad{2, 17, 1000}, FactLoad{3, 33, 1000}};
  m.issue(plan, 0);
  BatchPlan inject = plan_of(0, 0, {3}, 0);
  CHECK(m.ready(inject, 0) == 3 * (100 + 1000) + (1 + 2 + 3) * 250);
  p.block_ns = -1;
  CHECK_THROWS(CopyEngineModel(p));
}

TEST_CASE("copy lanes: issue time per copy, and a later step's copies queue behind earlier ones") {
  CopyEngineModel m(params(1, 250));
  CHECK(m.issue(plan_of(3, 5, {}, 0), 0) == 8 * 250);
  // Step 2 at 1000 ns loads 16 more facts (ids 0..15 again: their newest load counts).
  BatchPlan later = plan_of(0, 16, {}, 1000);
  CHECK(m.issue(later, 1000) == 16 * 250);
  // The lane still holds the first step's loads: their batch is handed over after the host
  // issued all 8 copies (2000 ns) and waits for the offloads that free its blocks (handed over
  // after 3 copies, 750 ns, done at 3750); it is done at 3750 + 5000.
  CHECK(m.ready(plan_of(0, 0, {2}, 2000), 2000) == 8750 + 16 * 1000);
  CHECK_FALSE(m.busy_at(8750 + 16 * 1000));
  CHECK_THROWS(CopyEngineModel(params(0)));
  CHECK_THROWS(CopyEngineModel(params(1.5)));
}

TEST_CASE("copy lanes: a batch starts once the host has issued it and every copy before it") {
  // 32 offloads of facts that stay resident (no load waits for them), then 16 loads, at 100 ns
  // of host time per copy: the load batch reaches its lane after 48 copies, 4800 ns.
  BatchPlan plan = plan_of(32, 16, {}, 0);
  plan.evictions.clear();
  CopyEngineModel slow(params(1, 100));
  CHECK(slow.issue(plan, 0) == 48 * 100);
  CHECK(slow.ready(plan_of(0, 0, {0}, 0), 0) == 4800 + 16 * 1000);
  // The offloads' second batch is handed over at 3200 ns but runs after the first (1600 ns
  // + 16 facts): the lane is busy until 1600 + 32,000.
  CHECK(slow.busy_at(1600 + 32 * 1000 - 1));
  CHECK_FALSE(slow.busy_at(1600 + 32 * 1000));
  // Without issue time the loads start at once.
  CopyEngineModel fast(params(1, 0));
  fast.issue(plan, 0);
  CHECK(fast.ready(plan_of(0, 0, {0}, 0), 0) == 16 * 1000);
}

TEST_CASE("calibrated executor: a step waits for the asynchronous loads it injects") {
  const CalibrationProfile p = lanes_profile(100, 7);
  CalibratedExecutor ex(CalibratedCostModel(ModelConfig{}, p));
  CHECK(ex.copies().params().bytes_per_ns == Approx(1.0));
  auto with_decode = [](BatchPlan plan) {
    plan.decodes.push_back(DecodeItem{99, 10});  // a step that computes: priced `step`
    return plan;
  };
  // Step 1 issues 16 loads and injects none of them: its pass runs while the host issues them
  // (copies_follow_forward), and the host's 160 ns outlast the 100 ns step; the stall (copies
  // move during the pass).
  const BatchPlan step1 = with_decode(plan_of(0, 16, {}, 0));
  REQUIRE(copies_follow_forward(step1));
  const BatchResult first = ex.execute(step1);
  CHECK(first.duration_ns == 16 * 10 + 7);
  CHECK(first.phases.load_ns == 0);
  // Step 2 at 1000 ns injects fact 4: it waits for the batch (handed to its lane once the host
  // issued its 16 copies, 160 ns; done at 16,160 ns); the copies are done when its forward pass
  // starts, no stall.
  const BatchResult second = ex.execute(with_decode(plan_of(0, 0, {4}, 1000)));
  CHECK(second.phases.load_ns == 16'160 - 1000);
  CHECK(second.duration_ns == (16'160 - 1000) + 100);
  // Step 3: nothing in flight any more, the plain price.
  CHECK(ex.execute(with_decode(plan_of(0, 0, {4}, 20'000))).duration_ns == 100);
}

TEST_CASE("calibrated executor: copies a step's pass needs go first, others beside the pass") {
  const CalibrationProfile p = lanes_profile(1000, 0);
  BatchPlan plan = plan_of(0, 16, {}, 0);
  plan.decodes.push_back(DecodeItem{99, 10});
  // Nothing of the pass needs the loads: it runs while the host issues them (160 ns of 1000).
  REQUIRE(copies_follow_forward(plan));
  CHECK(CalibratedExecutor(CalibratedCostModel(ModelConfig{}, p)).execute(plan).duration_ns ==
        1000);
  // Unless asked to price the executor before 0337801 (copies_beside_pass false): copies first.
  CHECK(
      CalibratedExecutor(CalibratedCostModel(ModelConfig{}, p), false).execute(plan).duration_ns ==
      160 + 1000);
  // With an encode in the step (it takes blocks after the copies), the host issues them first;
  // likewise when a first chunk injects one of them (it waits for its batch, done at 16,160 ns).
  BatchPlan encoding = plan;
  FactEncode encode;
  encode.fact = 77;
  encode.tokens = 8;
  encoding.encodes.push_back(encode);
  REQUIRE_FALSE(copies_follow_forward(encoding));
  CalibratedExecutor ex(CalibratedCostModel(ModelConfig{}, p));
  const SimTime priced = ex.cost_model().price(encoding).duration_ns;
  CHECK(ex.execute(encoding).duration_ns == priced + 160);
  BatchPlan injecting = plan_of(0, 16, {3}, 0);
  REQUIRE_FALSE(copies_follow_forward(injecting));
  CalibratedExecutor ex2(CalibratedCostModel(ModelConfig{}, p));
  const SimTime priced2 = ex2.cost_model().price(injecting).duration_ns;
  CHECK(ex2.execute(injecting).duration_ns == priced2 + 16'160);
  // No asynchronous copy at all: nothing to order.
  CHECK_FALSE(copies_follow_forward(BatchPlan{}));
}

TEST_CASE("calibrated executor: lane_speed scales a lane's rate alone against an in-step load") {
  CalibrationProfile p;
  p.knee = KneeRates{1e15, 1e12, 1e9};  // P = 1 byte/ns
  p.coefficients[kFeaturePcie] = 1.25;
  p.coefficients[kFeatureTransfers] = 1000;
  const CalibratedCostModel base(ModelConfig{}, p);
  CHECK(base.copy_engine_params().bytes_per_ns == Approx(0.8));
  CHECK(base.copy_engine_params().fact_ns == Approx(1000));
  p.async_copies.lane_speed = 2;
  const CopyEngineParams fast = CalibratedCostModel(ModelConfig{}, p).copy_engine_params();
  CHECK(fast.bytes_per_ns == Approx(1.6));
  CHECK(fast.fact_ns == Approx(500));
}
