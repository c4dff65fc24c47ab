// The calibration grid on the libtorch executor (fp32 on the CPU, the tiny model): its step
// sequences pass the executor's state checks (requests prefilled before they decode, injected
// facts resident, loads served by the host tier), everything is freed at the end, the copies
// issued are counted, and the fit runs on what was measured. No timing is asserted.
#include <cmath>

// The torch headers first: glog's CHECK must not replace Catch's.
#include "tests/executor/executor_test_util.h"

#include "executor/cost_model/calibration_profiler.h"
#include "tests/catch.h"

using namespace inferscale;
using namespace inferscale::test;

namespace {

/// Counts the executor's load fallbacks (a load whose KV the host tier does not hold).
class CheckedExecutor : public Executor {
 public:
  explicit CheckedExecutor(GpuExecutor& ex) : ex_(ex) {}
  BatchResult execute(const BatchPlan& plan) override {
    BatchResult r = ex_.execute(plan);
    fallbacks += ex_.last_stats().load_fallbacks;
    loads += plan.loads.size() + plan.async_loads.size();
    async_loads += plan.async_loads.size();
    async_copies += plan.async_loads.size() + plan.async_offloads.size();
    return r;
  }
  std::string name() const override { return ex_.name(); }
  std::uint64_t fallbacks = 0, loads = 0, async_loads = 0, async_copies = 0;

 private:
  GpuExecutor& ex_;
};

/// One small point of every kind the grids have (the full grids' sequences are walked without
/// an executor in calibration_test.cpp; here the real executor checks them, quickly).
CalibrationGrid every_kind() {
  CalibrationGrid g;
  g.name = "every_kind";
  auto add = [&g](auto edit) {
    CalibrationPoint p;
    edit(p);
    g.points.push_back(p);
  };
  add([](CalibrationPoint& p) { p.prefill_batch = 2, p.prefill_tokens = 40, p.k = 10; });
  add([](CalibrationPoint& p) {
    p.prefill_batch = 2, p.prefill_tokens = 64, p.prefill_chunks = 2;
  });
  add([](CalibrationPoint& p) { p.decode_batch = 4, p.decode_chunks = 4; });
  add([](CalibrationPoint& p) {
    p.decode_batch = 3, p.decode_chunks = 1, p.prefill_batch = 2, p.prefill_tokens = 32, p.k = 5;
  });
  add([](CalibrationPoint& p) { p.encodes = 4, p.encode_tokens = 24, p.encode_context = 128; });
  add([](CalibrationPoint& p) {
    p.decode_batch = 2, p.encodes = 2, p.encode_tokens = 16, p.encode_context = 0;
  });
  add([](CalibrationPoint& p) { p.loads = 4, p.move_tokens = 24; });
  add([](CalibrationPoint& p) { p.offloads = 3, p.move_tokens = 40; });
  add([](CalibrationPoint& p) {
    p.prefill_batch = 1, p.prefill_tokens = 16, p.k = 3, p.loads = 2, p.move_tokens = 24;
  });
  add([](CalibrationPoint& p) { p.async_loads = 5, p.move_tokens = 40; });  // copy_lanes' kinds
  add([](CalibrationPoint& p) { p.async_loads = 4, p.async_offloads = 4, p.move_tokens = 24; });
  add([](CalibrationPoint& p) {
    p.async_loads = 4, p.async_offloads = 4, p.offload_victims = true, p.move_tokens = 17;
  });
  add([](CalibrationPoint& p) {
    p.decode_batch = 2, p.decode_chunks = 1, p.async_loads = 3, p.move_tokens = 24;
    p.async_steps = 2;
  });
  add([](CalibrationPoint& p) { p.async_loads = 4, p.async_offloads = 1, p.move_tokens = 24; });
  add([](CalibrationPoint& p) {  // both lanes beside the first of two decode passes
    p.decode_batch = 2, p.decode_chunks = 1, p.async_loads = 3, p.async_offloads = 3;
    p.offload_victims = true, p.move_tokens = 17, p.async_steps = 2;
  });
  add([](CalibrationPoint& p) {  // more facts than one set-up step encodes (a wave's size)
    p.async_loads = 1100, p.async_offloads = 1000, p.offload_victims = true, p.move_tokens = 5;
  });
  add([](CalibrationPoint& p) {  // both lanes beside prefills injecting resident facts
    p.prefill_batch = 2, p.prefill_tokens = 16, p.k = 3, p.async_loads = 3, p.async_offloads = 3;
    p.offload_victims = true, p.move_tokens = 17, p.async_steps = 1;
  });
  return g;
}

}  // namespace

TEST_CASE("calibration grid runs on the libtorch executor") {
  const CalibrationGrid grid = every_kind();
  GpuExecutorOptions o = cpu_options();
  o.keep_logits = false;
  const CalibrationNeeds n = calibration_needs(grid, o.model, 2);
  o.pool_bytes = (n.pool_blocks + 64) * FactPool::block_bytes(o.model, 4);
  o.reserved_pool_tokens = 1024;
  o.decode_reserve_tokens = n.decode_reserve_tokens();
  o.kv_cache_tokens = std::uint32_t(n.cache_rows());
  o.rope_positions = std::int32_t(n.positions());
  // The host tier sized as `calibrate --executor gpu` sizes it: every fact the grid offloads.
  REQUIRE(n.host_blocks >= n.host_facts);
  REQUIRE(n.host_facts > 0);
  o.host_bytes = (n.host_blocks + 64) * FactPool::block_bytes(o.model, 4);
  GpuExecutor ex(o);
  CheckedExecutor checked(ex);
  const auto measured = profile_executor(checked, grid, o.model, ProfileOptions{1, 2}, nullptr);
  REQUIRE(measured.size() == grid.points.size());
  for (const auto& m : measured) CHECK(m.duration_ns > 0);
  CHECK(checked.loads > 0);
  CHECK(checked.async_loads > 0);
  CHECK(checked.fallbacks == 0);
  // The host time of issuing the asynchronous copies is counted for each copy issued.
  CHECK(ex.copy_issue().copies == checked.async_copies);
  CHECK(ex.copy_issue().ns > 0);
  CHECK(ex.pool().resident_facts() == 0);  // the postamble freed the bank
  CHECK(ex.pool().used_bytes() == 0);

  GpuConfig cpu;
  cpu.bf16_tflops = 1;
  cpu.hbm_gbps = 50;
  cpu.pcie_gbps = 10;
  const CalibrationFit fit =
      fit_calibration(fit_samples(measured), o.model, KneeRates::datasheet(cpu));
  CHECK(fit.train + fit.held_out == grid.points.size());
  for (double c : fit.coefficients) CHECK((std::isfinite(c) && c >= 0));
  CHECK(std::isfinite(fit.held_out_mape_pct));
}
