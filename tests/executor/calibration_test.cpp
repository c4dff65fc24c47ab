// Calibration: NNLS, the fit recovers known coefficients, profiling the roofline cost model and
// fitting predicts held-out points, and the calibrated model prices steps as its profile says
// (the grid itself: calibration_grid_test.cpp).
#include <cmath>
#include <utility>

#include "executor/copy_order.h"
#include "executor/cost_model/calibrated.h"
#include "executor/cost_model/calibration_copy_lanes.h"
#include "executor/cost_model/calibration_profiler.h"
#include "tests/catch.h"
#include "tests/executor/model_shapes.h"

using namespace inferscale;
using test_shapes::h200;
using test_shapes::llama_8b;

namespace {

/// Deterministic noise in [-amplitude, amplitude] from an index (no global RNG state).
double noise(std::size_t i, double amplitude) {
  std::uint64_t x = 0x9e3779b97f4a7c15ull * (i + 1);
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  return amplitude * (2.0 * double(x % 1000001) / 1000000.0 - 1.0);
}

/// Every grid point's work, as the profiler would count it (median step of each point).
std::vector<StepWork> grid_work(const CalibrationGrid& grid, const ModelConfig& m) {
  const CostModel counter(m, CostRates{});
  CalibrationPlanner planner(m, grid.shape);
  planner.preamble();
  std::vector<StepWork> out;
  for (const auto& pt : grid.points) {
    for (const auto& s : planner.steps(pt, 1)) {
      if (s.measured) out.push_back(counter.work(s.plan));
    }
  }
  return out;
}

/// The steps' times as `truth` prices them at `knee`, each off by up to +-`amplitude`
/// (deterministic), split as the calibration splits them.
std::vector<FitSample> synthetic_samples(const std::vector<StepWork>& work, const ModelConfig& m,
                                         const KneeRates& knee, const FeatureVector& truth,
                                         double amplitude) {
  std::vector<FitSample> samples;
  for (std::size_t i = 0; i < work.size(); ++i) {
    const double t = calibrated_ns(calibration_features(work[i], m, knee), truth);
    samples.push_back({work[i], t * (1.0 + noise(i, amplitude)), calibration_held_out(i)});
  }
  return samples;
}

/// The full grid's work for the 8B shape and the H200's datasheet knee: the synthetic fits' data.
struct FullGrid {
  ModelConfig m = llama_8b();
  std::vector<StepWork> work = grid_work(make_calibration_grid("full"), m);
  KneeRates datasheet = KneeRates::datasheet(h200());
  /// The datasheet knee with its GEMM rate scaled.
  KneeRates knee(double gemm_factor) const {
    KneeRates k = datasheet;
    k.gemm_flops_per_s *= gemm_factor;
    return k;
  }
};

}  // namespace

TEST_CASE("nonnegative least squares: exact solutions, active constraints, KKT") {
  // A known non-negative solution is recovered.
  Eigen::MatrixXd a(6, 3);
  a << 1, 0, 2, 0, 1, 1, 1, 1, 0, 2, 0, 1, 0, 3, 1, 1, 2, 2;
  const Eigen::Vector3d x_true(0.5, 2.0, 1.5);
  const Eigen::VectorXd x = nonnegative_least_squares(a, a * x_true);
  CHECK((x - x_true).norm() < 1e-9);

  // Unconstrained least squares would make a coefficient negative: NNLS pins it at zero and the
  // gradient conditions hold (zero gradient on positive coefficients, non-negative elsewhere).
  Eigen::MatrixXd c(4, 2);
  c << 1, 1, 1, 2, 1, 3, 1, 4;
  const Eigen::Vector4d b(4, 3, 2, 1);  // decreasing: the slope would be negative
  const Eigen::VectorXd y = nonnegative_least_squares(c, b);
  const Eigen::VectorXd unconstrained = c.colPivHouseholderQr().solve(b);
  CHECK(unconstrained(1) < 0);
  CHECK(y(1) == 0);
  CHECK(y(0) == Approx(2.5).epsilon(1e-9));
  const Eigen::VectorXd grad = c.transpose() * (c * y - b);
  CHECK(std::abs(grad(0)) < 1e-9);
  CHECK(grad(1) >= -1e-9);

  // An all-zero column gets zero.
  Eigen::MatrixXd z = Eigen::MatrixXd::Zero(3, 2);
  z.col(0) << 1, 2, 3;
  const Eigen::VectorXd w = nonnegative_least_squares(z, Eigen::Vector3d(2, 4, 6));
  CHECK(w(0) == Approx(2.0));
  CHECK(w(1) == 0);
}

TEST_CASE("calibration fit recovers known coefficients from noisy synthetic times") {
  const FullGrid g;
  const ModelConfig& m = g.m;
  const std::vector<StepWork>& work = g.work;
  KneeRates truth_knee = g.knee(0.62);
  FeatureVector truth{};
  truth[kFeatureRoofline] = 0.4;
  truth[kFeatureLinear] = 1.3;
  truth[kFeatureAttention] = 2.0;
  truth[kFeatureKv] = 1.2;
  truth[kFeatureInject] = 1.6;
  truth[kFeaturePcie] = 1.25;
  truth[kFeatureTransfers] = 30000;  // ns per fact moved
  truth[kFeaturePasses] = 400000;    // ns per forward pass
  truth[kFeatureTokens] = 40;        // ns per token
  truth[kFeatureSequences] = 6000;   // ns per sequence
  truth[kFeatureMixed] = 300000;     // ns per step of prefills beside decodes
  truth[kFeatureEncodes] = 20000;    // ns per encode
  truth[kFeatureStep] = 1500000;     // ns per step
  const std::vector<FitSample> samples = synthetic_samples(work, m, truth_knee, truth, 0.01);
  const CalibrationFit fit = fit_calibration(samples, m, g.datasheet);
  CHECK(fit.train + fit.held_out == samples.size());
  CHECK(fit.held_out == samples.size() / 5);
  CHECK(fit.held_out_mape_pct < 1.0);  // the noise is +-1 %
  CHECK(fit.train_mape_pct < 1.0);
  CHECK(fit.knee.gemm_flops_per_s / truth_knee.gemm_flops_per_s == Approx(1.0).epsilon(0.05));
  // The terms that carry most of the time come back within a few percent.
  for (auto f :
       {kFeatureRoofline, kFeatureLinear, kFeatureKv, kFeatureInject, kFeaturePcie, kFeatureStep}) {
    INFO(calibration_feature_names()[f]);
    CHECK(fit.coefficients[f] / truth[f] == Approx(1.0).epsilon(0.06));
  }
  for (double c : fit.coefficients) CHECK(c >= 0);
}

TEST_CASE("calibration fit finds a decode step's floor per sequence") {
  // Times whose decodes cost at least 9 us each in the kv term, however short their contexts
  // (the grid's decodes of 1-512 requests over 80-4,176 tokens); without the floor the fit
  // misses them by more.
  const FullGrid g;
  const ModelConfig& m = g.m;
  const std::vector<StepWork>& work = g.work;
  KneeRates truth_knee = g.knee(0.8);
  truth_knee.decode_floor_ns = 9000;
  // Near the H200's fit, in feature order: roofline, linear, attention, kv, inject, pcie,
  // transfers, passes, tokens, sequences, mixed, encodes, step.
  const FeatureVector truth = {0.2, 0.7, 2.0, 1.05, 1.1, 1.2, 1000, 2e6, 7000, 500, 1e6, 0, 8000};
  static_assert(kFeatureCount == 13 && kFeatureKv == 3 && kFeatureStep == 12);
  const std::vector<FitSample> samples = synthetic_samples(work, m, truth_knee, truth, 0.002);
  const CalibrationFit fit = fit_calibration(samples, m, g.datasheet);
  CHECK(fit.knee.decode_floor_ns == Approx(9000).margin(300));
  CHECK(fit.coefficients[kFeatureKv] == Approx(1.05).epsilon(0.05));
  CHECK(fit.held_out_mape_pct < 0.5);
  // The floor is where the decodes' error went: a fit without it misses them.
  FeatureVector at_zero = fit.coefficients;
  KneeRates no_floor = fit.knee;
  no_floor.decode_floor_ns = 0;
  double worst = 0;
  for (std::size_t i = 0; i < work.size(); ++i) {
    if (work[i].decode_tokens < 64 || work[i].prefill_tokens > 0) continue;
    const double t = calibrated_ns(calibration_features(work[i], m, no_floor), at_zero);
    worst = std::max(worst, std::abs(t / samples[i].duration_ns - 1));
  }
  CHECK(worst > 0.02);
}

TEST_CASE("calibration fit rejects samples without training points or time") {
  const ModelConfig m = llama_8b();
  const KneeRates k = KneeRates::datasheet(h200());
  StepWork w;
  w.decode_tokens = 1;
  CHECK_THROWS_AS(fit_calibration({{w, 1e6, true}}, m, k), std::invalid_argument);
  CHECK_THROWS_AS(fit_calibration({{w, 0.0, false}}, m, k), std::invalid_argument);
}

TEST_CASE("profiling the roofline cost model and fitting predicts held-out points") {
  const ModelConfig m = llama_8b();
  const GpuConfig gpu = h200();
  CostModelExecutor executor(CostModel(m, CostRates::from_gpu(gpu)));
  for (const std::string& name : calibration_grid_names()) {
    if (name == "copy_lanes") continue;  // not for the step fit (its own test below)
    INFO(name);
    const CalibrationGrid grid = make_calibration_grid(name);
    std::size_t lines = 0;
    const auto measured = profile_executor(executor, grid, m, ProfileOptions{1, 3},
                                           [&](const std::string&) { ++lines; });
    CHECK(lines == grid.points.size());
    REQUIRE(measured.size() == grid.points.size());
    for (const auto& p : measured) {
      CHECK(p.samples_ns.size() == 3);
      CHECK(p.duration_ns > 0);
    }
    const CalibrationFit fit = fit_calibration(fit_samples(measured), m, KneeRates::datasheet(gpu));
    INFO("train " << fit.train_mape_pct << " % held out " << fit.held_out_mape_pct << " %");
    CHECK(fit.held_out_mape_pct < 1.0);  // the issue asks for 5 % on hardware
    CHECK(fit.train_mape_pct < 1.0);
    // The cost model's own terms come back: its overheads and its PCIe and HBM efficiencies.
    const auto& c = fit.coefficients;
    CHECK(c[kFeatureStep] == Approx(gpu.step_overhead_us * 1e3).epsilon(0.02));
    CHECK(c[kFeatureSequences] == Approx(gpu.per_seq_overhead_us * 1e3).epsilon(0.05));
    CHECK(c[kFeaturePcie] == Approx(1.0 / gpu.pcie_efficiency).epsilon(0.02));
    CHECK(c[kFeatureInject] == Approx(1.0 / gpu.mbu).epsilon(0.03));
    CHECK(c[kFeatureRoofline] == Approx(1.0 / gpu.mbu).epsilon(0.03));
    const std::string csv = calibration_points_csv(grid, measured, fit, m);
    CHECK(std::count(csv.begin(), csv.end(), '\n') == std::ptrdiff_t(grid.points.size() + 1));
  }
}

namespace {

/// The roofline cost model, three times as slow for its first `slow_steps` steps: a machine that
/// is not steady when a calibration starts.
class SlowStart : public Executor {
 public:
  SlowStart(const ModelConfig& m, const GpuConfig& gpu, std::size_t slow_steps)
      : inner_(CostModel(m, CostRates::from_gpu(gpu))), slow_steps_(slow_steps) {}
  BatchResult execute(const BatchPlan& plan) override {
    BatchResult r = inner_.execute(plan);
    if (steps_++ < slow_steps_) r.duration_ns *= 3;
    return r;
  }
  std::string name() const override { return "slow start"; }

 private:
  CostModelExecutor inner_;
  std::size_t slow_steps_, steps_ = 0;
};

}  // namespace

TEST_CASE("profiling measures the grid's first points again until they agree") {
  const ModelConfig m = llama_8b();
  const GpuConfig gpu = h200();
  const CalibrationGrid grid = make_calibration_grid("small");
  const ProfileOptions options{1, 3};
  SlowStart steady(m, gpu, 0);
  const auto truth = profile_executor(steady, grid, m, options, nullptr);
  for (const auto& p : truth) CHECK(p.first_ns == 0);  // nothing moved
  // Slow for the preamble and the first points: they are measured again and take the steady
  // medians; every other point is as measured once.
  CalibrationPlanner planner(m, grid.shape);
  std::size_t slow = planner.preamble().size();
  for (std::size_t i = 0; i < 3; ++i) slow += planner.steps(grid.points[i], 4).size();
  SlowStart warming(m, gpu, slow);
  std::vector<std::string> lines;
  const auto measured = profile_executor(warming, grid, m, options,
                                         [&](const std::string& l) { lines.push_back(l); });
  REQUIRE(measured.size() == truth.size());
  std::size_t moved = 0;
  for (std::size_t i = 0; i < truth.size(); ++i) {
    INFO("point " << i);
    CHECK(measured[i].duration_ns == Approx(truth[i].duration_ns));
    if (measured[i].first_ns > 0) {
      CHECK(measured[i].first_ns == Approx(3 * truth[i].duration_ns));
      ++moved;
    }
  }
  CHECK(moved == 3);
  // A line per point, then one per point measured again.
  CHECK(lines.size() == grid.points.size() + 3);
  CHECK(lines.back().find("measured again") != std::string::npos);
  // recheck 0: the first points keep their slow medians.
  ProfileOptions once = options;
  once.recheck = 0;
  SlowStart warming_once(m, gpu, slow);
  const auto kept = profile_executor(warming_once, grid, m, once, nullptr);
  CHECK(kept[0].duration_ns == Approx(3 * truth[0].duration_ns));
  CHECK(kept[0].first_ns == 0);
}

TEST_CASE("calibrated cost model prices a plan as the sum of its profile's terms") {
  const ModelConfig m = llama_8b();
  CalibrationProfile p;
  p.model = CalibrationProfile::model_of(m);
  p.knee = KneeRates::datasheet(h200());
  for (std::size_t i = 0; i < kFeatureCount; ++i) p.coefficients[i] = 1.0 + 0.1 * double(i);
  p.coefficients[kFeatureStep] = 250000;
  const CalibratedCostModel model(m, p);

  const CalibrationGrid grid = make_calibration_grid("small");
  CalibrationPlanner planner(m, grid.shape);
  planner.preamble();
  const CostModel counter(m, CostRates{});
  std::size_t priced = 0;
  for (const auto& pt : grid.points) {
    for (const auto& s : planner.steps(pt, 1)) {
      if (!s.measured) continue;
      const BatchResult r = model.price(s.plan);
      const double expected =
          calibrated_ns(calibration_features(counter.work(s.plan), m, p.knee), p.coefficients);
      CHECK(double(r.duration_ns) == Approx(expected).margin(1.0));
      const auto& ph = r.phases;
      const SimTime sum =
          ph.prefill_ns + ph.decode_ns + ph.encode_ns + ph.inject_ns + ph.load_ns + ph.overhead_ns;
      CHECK(std::abs(sum - r.duration_ns) <= 3);  // each phase rounded on its own
      CHECK(ph.overhead_ns >= 250000);
      ++priced;
    }
  }
  CHECK(priced == grid.points.size());
  BatchPlan idle;
  idle.released = {1, 2};
  CHECK(model.price(idle).duration_ns == 0);
  CHECK(model.encode_cost_ns(24, 128) > model.encode_cost_ns(24, 0));

  CalibratedExecutor ex(model);
  CHECK(ex.name() == "calibrated");
  // Runs of decode-only steps: each step as execute() prices its plan.
  BatchPlan decodes;
  std::uint64_t contexts = 0;
  for (std::uint32_t i = 0; i < 5; ++i) {
    decodes.decodes.push_back(DecodeItem{i, 1000 + 37 * i});
    contexts += decodes.decodes.back().context_tokens;
  }
  std::vector<SimTime> durations(40);
  REQUIRE(ex.price_decodes(5, contexts, durations));
  for (const SimTime d : durations) {
    CHECK(d == ex.execute(decodes).duration_ns);
    for (auto& item : decodes.decodes) item.context_tokens += 1;
  }
  CHECK(durations.back() > durations.front());
}

TEST_CASE("row padding: the GPU executor's rule, priced as rows by the calibrated model") {
  // The rule: passes of more than `above` tokens up to a multiple of the bucket.
  const RowPadding pad = RowPadding::of_executor(512, 8192);
  CHECK(pad.above == 512);
  CHECK(pad.rows(512) == 0);
  CHECK(pad.rows(513) == 63);
  CHECK(pad.rows(576) == 0);
  CHECK(pad.rows(2576) == 48);
  CHECK(RowPadding::of_executor(0, 8192).rows(2576) == 0);     // no warm-up: no padding
  CHECK(RowPadding::of_executor(8192, 8192).rows(9000) == 0);  // every pass warmed
  CHECK(RowPadding::of_executor(512, 8192, 1).rows(600) == 0);

  const ModelConfig m = llama_8b();
  CalibrationProfile p;
  p.model = CalibrationProfile::model_of(m);
  p.knee = KneeRates::datasheet(h200());
  for (std::size_t i = 0; i < kFeatureCount; ++i) p.coefficients[i] = 1.0 + 0.1 * double(i);
  const CalibratedCostModel plain(m, p);
  const CalibratedCostModel padded(m, p, pad);
  const CostModel counter(m, CostRates{});

  // Ten prefills of 60 query tokens and 30 decodes: a pass of 630 tokens, padded by 10 rows.
  BatchPlan mixed;
  for (std::uint32_t i = 0; i < 10; ++i) {
    PrefillItem item;
    item.request = i;
    item.query_tokens = item.prompt_tokens = item.computed_total = item.computed_now = 60;
    item.first_chunk = item.last_chunk = true;
    mixed.prefills.push_back(item);
  }
  for (std::uint32_t i = 0; i < 30; ++i) mixed.decodes.push_back(DecodeItem{100 + i, 900});
  const StepWork w = counter.work(mixed);
  const StepWork pw = padded.padded(w);
  CHECK(pw.prefill_tokens == w.prefill_tokens + 10);
  CHECK(pw.decode_tokens == w.decode_tokens);
  CHECK(pw.gemm_flops == Approx(w.gemm_flops + 10 * m.layer_flops_per_token()));
  CHECK(pw.hbm_bytes == Approx(w.hbm_bytes + 10.0 * double(m.kv_bytes_per_token())));
  CHECK(pw.sequences == w.sequences);  // nothing samples the padding
  CHECK(padded.price(mixed).duration_ns > plain.price(mixed).duration_ns);
  CHECK(padded.price(mixed).duration_ns ==
        SimTime(std::llround(calibrated_ns(calibration_features(pw, m, p.knee), p.coefficients))));
  // A pass at a multiple of the bucket, or of at most `above` tokens, is priced as it is.
  for (std::uint32_t i = 30; i < 40; ++i) mixed.decodes.push_back(DecodeItem{100 + i, 900});
  CHECK(padded.price(mixed).duration_ns == plain.price(mixed).duration_ns);  // 640 tokens
  mixed.prefills.resize(8);
  mixed.decodes.resize(32);
  CHECK(padded.price(mixed).duration_ns == plain.price(mixed).duration_ns);  // 512 tokens

  // Decode-only steps of more than 512 requests pad their decode rows; price_decodes agrees
  // with execute() there.
  BatchPlan decodes;
  std::uint64_t contexts = 0;
  for (std::uint32_t i = 0; i < 600; ++i) {
    decodes.decodes.push_back(DecodeItem{i, 300 + i});
    contexts += decodes.decodes.back().context_tokens;
  }
  CHECK(padded.padded(counter.work(decodes)).decode_tokens == 640);
  CalibratedExecutor ex(padded);
  std::vector<SimTime> durations(4);
  REQUIRE(ex.price_decodes(600, contexts, durations));
  for (const SimTime d : durations) {
    CHECK(d == ex.execute(decodes).duration_ns);
    CHECK(d > plain.price(decodes).duration_ns);
    for (auto& item : decodes.decodes) item.context_tokens += 1;
  }
}

TEST_CASE("a profile names the model it was calibrated for") {
  const ModelConfig m = llama_8b();
  CalibrationProfile p;
  p.model = CalibrationProfile::model_of(m);
  CHECK(profile_model_mismatch(p, m).empty());
  ModelConfig other = m;
  other.name = "mistral-7b";
  const std::string why = profile_model_mismatch(p, other);
  CHECK(why.find("'llama-3.1-8b'") != std::string::npos);
  CHECK(why.find("'mistral-7b'") != std::string::npos);
  ModelConfig wider = m;
  wider.ffn = 16384;  // same name, different shape
  CHECK(profile_model_mismatch(p, wider).find("ffn 16384") != std::string::npos);
}

namespace {

/// The calibrated executor on a clock: each step starts when the one before it ended, as in a
/// run, so the copy lanes' state carries from step to step as a device's does.
class ClockedExecutor : public Executor {
 public:
  explicit ClockedExecutor(CalibratedCostModel model, bool copies_beside_pass = true)
      : ex_(std::move(model), copies_beside_pass) {}
  BatchResult execute(const BatchPlan& plan) override {
    BatchPlan p = plan;
    p.now = now_;
    const BatchResult r = ex_.execute(p);
    now_ += r.duration_ns;
    return r;
  }
  std::string name() const override { return "clocked"; }

 private:
  CalibratedExecutor ex_;
  SimTime now_ = 0;
};

}  // namespace

TEST_CASE(
    "copy lanes: the lane speed and stall of an executor whose lanes are modelled come back") {
  const ModelConfig m = llama_8b();
  const GpuConfig gpu = h200();
  // Step coefficients from the roofline (as a device's fit would give), then lanes of a known
  // speed: the "device" is the calibrated executor itself.
  CostModelExecutor roofline(CostModel(m, CostRates::from_gpu(gpu)));
  const CalibrationGrid small = make_calibration_grid("small");
  const CalibrationFit fit = fit_calibration(
      fit_samples(profile_executor(roofline, small, m, ProfileOptions{0, 1}, nullptr)), m,
      KneeRates::datasheet(gpu));
  CalibrationProfile profile;
  profile.model = CalibrationProfile::model_of(m);
  profile.knee = fit.knee;
  profile.coefficients = fit.coefficients;
  profile.async_copies.issue_ns = 1800;
  const CalibrationGrid lanes = make_calibration_grid("copy_lanes");
  const ProfileOptions options{1, 2};
  // (lane speed, stall ns, duplex, block ns): the grid's loads beside decode steps make the stall
  // measurable, its loads beside as many offloads the duplex, its facts of 13-256 tokens the
  // time per block.
  struct Lanes {
    double speed, stall, duplex, block;
  };
  for (const auto& [truth, stall, duplex, block] :
       {Lanes{0.8, 0.0, 1.0, 0.0}, Lanes{1.37, 1.5e6, 0.66, 3000.0}, Lanes{2.5, 4e5, 0.9, 800.0}}) {
    INFO("lane_speed " << truth << ", stall_ns " << stall << ", duplex " << duplex << ", block_ns "
                       << block);
    CalibrationProfile device = profile;
    device.async_copies.lane_speed = truth;
    device.async_copies.stall_ns = stall;
    device.async_copies.duplex = duplex;
    device.async_copies.block_ns = block;
    ClockedExecutor clocked{CalibratedCostModel(m, device)};
    const auto measured = profile_executor(clocked, lanes, m, options, nullptr);
    // Fitted from a profile that says otherwise: the measurement decides.
    const CopyLaneFit lf = fit_copy_lanes(lanes, measured, profile, m, options);
    CHECK(lf.lane_speed == Approx(truth).epsilon(0.002));
    CHECK(lf.block_fitted);
    CHECK(lf.block_ns == Approx(block).margin(100));
    CHECK(lf.stall_fitted);
    CHECK(lf.stall_beside_prefills);                  // the grid's prefills beside copies refit it
    CHECK(lf.stall_ns == Approx(stall).margin(1e5));  // about 0.1 ms: it trades off a little speed
    CHECK(lf.duplex_fitted);
    CHECK(lf.duplex == Approx(duplex).margin(0.01));
    CHECK(lf.max_ape_pct < 0.5);
    // A slower lane takes longer to deliver the same loads: the measurement is not flat.
    REQUIRE(lf.predicted_ns.size() == lanes.points.size());
    CHECK(measured.back().duration_ns > 2 * measured.front().duration_ns);
  }
  // A grid with a point of no asynchronous loads is refused.
  CHECK_THROWS_AS(fit_copy_lanes(small, profile_executor(roofline, small, m, options, nullptr),
                                 profile, m, options),
                  std::invalid_argument);
  // An executor that issues every step's copies before its pass (before 0337801; calibrate
  // --copies-first) is fitted with that order: its lanes come back; fitted as if its copies went
  // beside the pass, the stall does not.
  CalibrationProfile device = profile;
  device.async_copies.lane_speed = 1.37;
  device.async_copies.stall_ns = 1.5e6;
  device.async_copies.duplex = 0.66;
  device.async_copies.block_ns = 3000;
  ClockedExecutor first{CalibratedCostModel(m, device), false};
  const auto measured = profile_executor(first, lanes, m, options, nullptr);
  ProfileOptions first_options = options;
  first_options.copies_beside_pass = false;
  const CopyLaneFit lf = fit_copy_lanes(lanes, measured, profile, m, first_options);
  CHECK(lf.lane_speed == Approx(1.37).epsilon(0.002));
  CHECK(lf.stall_ns == Approx(1.5e6).margin(1e5));
  CHECK(lf.max_ape_pct < 0.5);
  const CopyLaneFit wrong = fit_copy_lanes(lanes, measured, profile, m, options);
  CHECK(std::abs(wrong.stall_ns - 1.5e6) > 1e5);
}
