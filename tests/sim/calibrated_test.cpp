// Calibrated runs: the profile file (round trip, positioned errors), `executor: {kind:
// calibrated}` (hand-checked golden run, a profile fitted on the cost model reproduces its run,
// other coefficients change it, model and GPU mismatches), and `inferscale calibrate`.

#include <cstdlib>
#include <regex>

#include "executor/cost_model/calibration_profiler.h"
#include "sim/config/experiment.h"
#include "sim/config/profile.h"
#include "sim/executor_factory.h"
#include "sim/runner.h"
#include "tests/catch.h"
#include "tests/sim/sim_test_util.h"

using namespace inferscale;
using namespace inferscale::test;

namespace {

/// A profile of the tiny test model in which a step costs `step_ns` and nothing else counts.
CalibrationProfile tiny_profile(double step_ns) {
  CalibrationProfile p;
  p.model = CalibrationProfile::model_of(
      load_model(source_path("tests/sim/data/tiny_model.yaml"), "test"));
  p.gpu = "tiny-gpu";
  p.executor = "test";
  p.knee = KneeRates{1e15, 1e12, 1e10};
  p.coefficients[kFeatureStep] = step_ns;
  return p;
}

std::vector<RunOutcome> run_file(const std::filesystem::path& dir, const std::string& yaml) {
  const auto exp = load_experiment(write_text(dir / "exp.yaml", yaml), {});
  RunnerOptions opts;
  opts.out_dir = (dir / "results").string();
  opts.progress = false;
  return run_experiment(exp, opts);
}

const char* kGolden =
    "scheduler: {max_batch_tokens: 1024, max_seqs: 8}\n"
    "serving: {mode: kv_inject, k: 50, header_tokens: 0, footer_tokens: 0}\n"
    "store: {gpu: {capacity: 64KiB}}\n";

/// The message of the InputError `f` throws (empty if none).
template <class F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a profile writes and loads back identically") {
  const auto dir = temp_dir("profile_roundtrip");
  CalibrationProfile p = tiny_profile(1234.5);
  for (std::size_t i = 0; i < kFeatureCount; ++i) p.coefficients[i] = 0.1 + 1.0 / 3.0 * double(i);
  p.knee = KneeRates{6.4285e14 / 3, 4.8e12, 6.4e10 * 0.7, 8900.0 / 3};
  p.machine = "NVIDIA \"H200\" \\ test";
  p.date = "2025-01-02T03:04:05Z";
  p.command = "inferscale calibrate --executor gpu --out x.yaml";
  p.grid = {"full", "axes: a, b; c", "every 5th", 235, 188, 47, 2, 5};
  p.train_mape_pct = 1.0 / 7.0;
  p.held_out_mape_pct = 2.0 / 3.0;
  p.held_out_max_ape_pct = 4.25;
  p.async_copies.present = true;
  p.async_copies.duplex = 2.0 / 3.0;
  p.async_copies.lane_speed = 1.25;
  p.async_copies.issue_ns = 2150.5;
  p.async_copies.stall_ns = 1.33e7;
  p.async_copies.batch_facts = 8;
  p.async_copies.source = "a \"timeline\"";
  const auto path = (dir / "sub" / "p.yaml").string();
  write_profile(path, p);
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
  const CalibrationProfile q = load_profile(path, "test");
  CHECK(q.features == p.features);
  CHECK(q.model.name == p.model.name);
  CHECK(q.model.layers == p.model.layers);
  CHECK(q.model.ffn == p.model.ffn);
  CHECK(q.model.vocab == p.model.vocab);
  CHECK(q.gpu == p.gpu);
  CHECK(q.executor == p.executor);
  CHECK(q.machine == p.machine);
  CHECK(q.date == p.date);
  CHECK(q.command == p.command);
  CHECK(q.knee.gemm_flops_per_s == p.knee.gemm_flops_per_s);  // exact: shortest round trip
  CHECK(q.knee.pcie_bytes_per_s == p.knee.pcie_bytes_per_s);
  CHECK(q.knee.decode_floor_ns == p.knee.decode_floor_ns);
  for (std::size_t i = 0; i < kFeatureCount; ++i) CHECK(q.coefficients[i] == p.coefficients[i]);
  CHECK(q.grid.name == p.grid.name);
  CHECK(q.grid.description == p.grid.description);
  CHECK(q.grid.points == 235);
  CHECK(q.grid.held_out == 47);
  CHECK(q.grid.repeats == 5);
  CHECK(q.train_mape_pct == p.train_mape_pct);
  CHECK(q.held_out_mape_pct == p.held_out_mape_pct);
  CHECK(q.async_copies.present);
  CHECK(q.async_copies.duplex == p.async_copies.duplex);
  CHECK(q.async_copies.lane_speed == 1.25);
  CHECK(q.async_copies.issue_ns == p.async_copies.issue_ns);
  CHECK(q.async_copies.stall_ns == p.async_copies.stall_ns);
  CHECK(q.async_copies.batch_facts == 8);
  CHECK(q.async_copies.source == p.async_copies.source);
  CHECK(profile_yaml(q) == profile_yaml(p));
  // Without the section: the defaults (the lanes at their rate alone), and none written back.
  const CalibrationProfile plain =
      load_profile(write_text(dir / "plain.yaml", profile_yaml(tiny_profile(1500))), "test");
  CHECK_FALSE(plain.async_copies.present);
  CHECK(plain.async_copies.duplex == 1);
  CHECK(plain.async_copies.lane_speed == 1);
  CHECK(plain.async_copies.stall_ns == 0);
  CHECK(profile_yaml(plain).find("async_copies") == std::string::npos);
  // A profile written before the decode floor existed: none.
  std::string old = profile_yaml(tiny_profile(1500));
  const auto floor_line = old.find("  decode_floor_ns:");
  REQUIRE(floor_line != std::string::npos);
  old.erase(floor_line, old.find('\n', floor_line) + 1 - floor_line);
  CHECK(load_profile(write_text(dir / "old.yaml", old), "test").knee.decode_floor_ns == 0);
}

TEST_CASE("a malformed profile is an error at its file, line and column") {
  const auto dir = temp_dir("profile_errors");
  const std::string good = profile_yaml(tiny_profile(1500));
  auto edit = [&](const std::string& from, const std::string& to) {
    const auto at = good.find(from);
    REQUIRE(at != std::string::npos);
    std::string s = good;
    s.replace(at, from.size(), to);
    return write_text(dir / "p.yaml", s);
  };
  auto error = [&](const std::string& path) {
    return input_error([&] { load_profile(path, "test"); });
  };
  // Each: the edit, then what the message must name.
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"  step: 1500", "  step: -3", "coefficients.step"},
      {"  step: 1500", "  step: fast", "expected a number"},
      {"  step: 1500", "  stepp: 1000000", "unknown key 'stepp'"},
      {"  kv: 0", "  kv: 0\n  linearr: 1", "linearr"},
      {"features: roofline-v2", "features: roofline-v0", "this build computes"},
      {"format: 1", "format: 2", "format 2"},
      {"  hbm_bytes_per_s: 1e+12", "  hbm_bytes_per_s: 0", "knee.hbm_bytes_per_s"},
      {"  layers: 1\n", "", "missing key 'layers'"},
      {"knee:", "knee: [1, 2\nx:", "YAML syntax error"},
      {"knee:", "async_copies: {duplex: 0}\nknee:", "async_copies.duplex"},
      {"knee:", "async_copies: {duplex: 1.5}\nknee:", "async_copies.duplex"},
      {"knee:", "async_copies: {stall_ns: -1}\nknee:", "async_copies.stall_ns"},
      {"knee:", "async_copies: {lane_speed: 0}\nknee:", "async_copies.lane_speed"},
      {"knee:", "async_copies: {batch_facts: 0}\nknee:", "async_copies.batch_facts"},
      {"knee:", "async_copies: {dupplex: 1}\nknee:", "unknown key 'dupplex'"},
  };
  const std::regex positioned(".*p\\.yaml:[0-9]+(:[0-9]+)?.*");
  for (const auto& [from, to, expect] : cases) {
    INFO(from << " -> " << to);
    const std::string msg = error(edit(from, to));
    CHECK(msg.find(expect) != std::string::npos);
    CHECK(std::regex_match(msg, positioned));
  }
  // A missing coefficient names the coefficients map.
  CHECK(error(edit("  encodes: 0  # ns per fact encode\n", "")).find("missing key 'encodes'") !=
        std::string::npos);
  CHECK(error((dir / "absent.yaml").string()).find("not found") != std::string::npos);
  CHECK(error(write_text(dir / "other.yaml", "experiment: x\n")).find("unknown key") !=
        std::string::npos);
}

TEST_CASE("calibrated run: a profile's step cost drives the hand-checked golden run") {
  const auto dir = temp_dir("calibrated_golden");
  const auto trace = source_path("tests/sim/data/golden.jsonl");
  write_profile((dir / "slow.yaml").string(), tiny_profile(2e6));
  const auto plain = run_file(dir, tiny_config(trace, kGolden));
  const auto calibrated = run_file(
      dir, tiny_config(trace, std::string(kGolden) + "executor: {kind: calibrated, profile: " +
                                  (dir / "slow.yaml").string() + "}\n"));
  // The golden run's steps cost 1 ms each (the tiny GPU's step overhead); the profile says 2 ms,
  // so every time doubles: request 1's TTFT is 2 ms, 2 requests finish in 6 ms.
  CHECK(plain[0].summary.throughput_rps == Approx(2.0 / 0.003));
  CHECK(calibrated[0].summary.throughput_rps == Approx(2.0 / 0.006));
  CHECK(calibrated[0].summary.ttft_ms.p50 == Approx(2 * plain[0].summary.ttft_ms.p50));
  const auto summary = read_text(std::filesystem::path(calibrated[0].dir) / "summary.json");
  CHECK(summary.find("\"calibrated\"") != std::string::npos);
}

TEST_CASE("calibrated run: fitted on the cost model it reproduces the cost model's run") {
  const auto dir = temp_dir("calibrated_fit");
  const ModelConfig model = load_model("llama-3.1-8b", "test");
  const GpuConfig gpu = load_gpu("h200", "test");
  CostModelExecutor roofline(CostModel(model, CostRates::from_gpu(gpu)));
  const CalibrationGrid grid = make_calibration_grid("small");
  const auto measured = profile_executor(roofline, grid, model, ProfileOptions{0, 1}, nullptr);
  const CalibrationFit fit =
      fit_calibration(fit_samples(measured), model, KneeRates::datasheet(gpu));
  CalibrationProfile p;
  p.model = CalibrationProfile::model_of(model);
  p.gpu = gpu.name;
  p.executor = "cost_model";
  p.knee = fit.knee;
  p.coefficients = fit.coefficients;
  write_profile((dir / "fit.yaml").string(), p);
  p.coefficients[kFeatureRoofline] *= 1.5;  // a slower GPU
  write_profile((dir / "slow.yaml").string(), p);

  const std::string base =
      "experiment: e\nseed: 3\nmodel: llama-3.1-8b\ngpu: h200\n"
      "trace: {generate: {users: 20, requests: 300, k: 20, arrival: poisson, rate: 6}}\n"
      "serving: {k: 20}\nstore: {gpu: {capacity: 10%}}\n"
      "runs:\n  - name: text\n    serving: {mode: text}\n"
      "  - name: kv\n    serving: {mode: kv_inject}\n";
  const auto plain = run_file(dir, base);
  const auto fitted = run_file(
      dir, base + "executor: {kind: calibrated, profile: " + (dir / "fit.yaml").string() + "}\n");
  const auto slow = run_file(
      dir, base + "executor: {kind: calibrated, profile: " + (dir / "slow.yaml").string() + "}\n");
  REQUIRE(plain.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    INFO(plain[i].config.name);
    const auto &a = plain[i].summary, &b = fitted[i].summary, &c = slow[i].summary;
    CHECK(b.requests == a.requests);
    CHECK(b.throughput_rps == Approx(a.throughput_rps).epsilon(0.05));
    CHECK(b.ttft_ms.p50 == Approx(a.ttft_ms.p50).epsilon(0.05));
    CHECK(b.ttft_ms.p99 == Approx(a.ttft_ms.p99).epsilon(0.05));
    CHECK(b.tpot_ms.p50 == Approx(a.tpot_ms.p50).epsilon(0.05));
    CHECK(c.tpot_ms.p50 > 1.2 * a.tpot_ms.p50);  // other coefficients: another run
    CHECK(c.ttft_ms.p50 > 1.1 * a.ttft_ms.p50);
  }

  // A profile of the GPU executor also prices the rows that executor pads a pass of more than
  // executor.warm_rows tokens with (text prompts here make passes of up to 8,192 tokens); a
  // profile of the cost model pads nothing, whatever warm_rows says.
  p.coefficients = fit.coefficients;
  p.executor = "gpu";
  write_profile((dir / "gpu.yaml").string(), p);
  auto with = [&](const std::string& profile, const std::string& warm_rows) {
    return run_file(dir, base + "executor: {kind: calibrated, profile: " +
                             (dir / profile).string() + ", warm_rows: " + warm_rows + "}\n");
  };
  const auto unpadded = with("fit.yaml", "0");
  const auto gpu_plain = with("gpu.yaml", "0");
  const auto gpu_padded = with("gpu.yaml", "512");
  for (std::size_t i = 0; i < 2; ++i) {
    INFO(plain[i].config.name);
    CHECK(unpadded[i].summary.ttft_ms.mean == fitted[i].summary.ttft_ms.mean);
    CHECK(gpu_plain[i].summary.ttft_ms.mean == fitted[i].summary.ttft_ms.mean);
  }
  CHECK(gpu_padded[0].summary.ttft_ms.mean > gpu_plain[0].summary.ttft_ms.mean);  // text
}

TEST_CASE("calibrated run: recompute costs for cost-aware policies come from the profile") {
  const auto dir = temp_dir("calibrated_pricing");
  const auto trace = source_path("tests/sim/data/golden.jsonl");
  const auto profile = (dir / "p.yaml").string();
  CalibrationProfile p = tiny_profile(3e6);
  p.coefficients[kFeatureEncodes] = 7000;
  p.coefficients[kFeatureTokens] = 11;
  write_profile(profile, p);
  const auto exp = load_experiment(
      write_text(dir / "exp.yaml", tiny_config(trace, std::string(kGolden) +
                                                          "executor: {kind: calibrated, profile: " +
                                                          profile + "}\n")),
      {});
  const RunConfig& run = exp.runs.at(0);
  // One encode of 24 tokens after 100 context tokens: step + encode + 124 tokens.
  CHECK(encode_pricing(run)(24, 100) == 3000000 + 7000 + 124 * 11);
  RunConfig plain = run;
  plain.executor.kind = "cost_model";
  CHECK(encode_pricing(plain)(24, 100) ==
        CostModel(plain.model, CostRates::from_gpu(plain.gpu)).encode_cost_ns(24, 100));
}

TEST_CASE("calibrated run: asynchronous loads are planned alike, and wait on the copy lanes") {
  const auto dir = temp_dir("calibrated_async");
  const ModelConfig model = load_model("llama-3.1-8b", "test");
  const GpuConfig gpu = load_gpu("h200", "test");
  CalibrationProfile p;
  p.model = CalibrationProfile::model_of(model);
  p.gpu = gpu.name;
  p.executor = "test";
  p.knee = KneeRates::datasheet(gpu);
  p.coefficients[kFeatureStep] = 2e6;
  p.coefficients[kFeaturePcie] = 3;  // copies three times as slow as the datasheet's
  write_profile((dir / "plain.yaml").string(), p);
  p.async_copies.present = true;
  p.async_copies.duplex = 0.5;
  p.async_copies.stall_ns = 20e6;
  write_profile((dir / "copies.yaml").string(), p);
  const std::string base = async_loads_experiment();
  auto run_with = [&](const std::string& profile) {
    return run_file(dir, base + "executor: {kind: calibrated, profile: " +
                             (dir / profile).string() + "}\n")
        .at(0);
  };
  const RunOutcome plain = run_with("plain.yaml"), copies = run_with("copies.yaml");
  REQUIRE(plain.summary.loads > 0);
  // The scheduler predicts a load with the GPU preset's PCIe rate, not the profile's.
  CHECK(load_pricing(plain.config)(1 << 20) ==
        CostModel(model, CostRates::from_gpu(gpu)).load_cost_ns(1 << 20));
  // Slower lanes and a stall while they move: the prefills that inject loads wait longer.
  CHECK(copies.summary.ttft_ms.p50 > 1.2 * plain.summary.ttft_ms.p50);
  CHECK(copies.summary.ttft_ms.p99 > 1.2 * plain.summary.ttft_ms.p99);
  // With a slow host (0.5 ms per copy), steps whose passes need none of their copies issue them
  // beside the pass (the default) or first (executor.copies_beside_pass: false, the GPU
  // executor before 0337801): first, every such pass waits for the host.
  p.async_copies.issue_ns = 5e5;
  write_profile((dir / "slow_host.yaml").string(), p);
  auto run_order = [&](const std::string& beside) {
    return run_file(dir, base + "executor: {kind: calibrated, profile: " +
                             (dir / "slow_host.yaml").string() + ", copies_beside_pass: " + beside +
                             "}\n")
        .at(0);
  };
  const RunOutcome beside = run_order("true"), first = run_order("false");
  CHECK(first.summary.ttft_ms.mean > beside.summary.ttft_ms.mean);
  CHECK(first.config.executor.copies_beside_pass == false);
  CHECK(beside.config.executor.copies_beside_pass == true);
}

TEST_CASE("calibrated run: a profile of another model or GPU is a clear error") {
  const auto dir = temp_dir("calibrated_mismatch");
  const auto trace = source_path("tests/sim/data/golden.jsonl");
  const auto profile = (dir / "tiny.yaml").string();
  write_profile(profile, tiny_profile(1e6));
  const std::string use = "executor: {kind: calibrated, profile: " + profile + "}\n";
  auto check = [&](const std::string& yaml) {
    return input_error([&] {
      const auto exp = load_experiment(write_text(dir / "exp.yaml", yaml), {});
      validate_experiment(exp);
    });
  };
  const std::string other_model =
      "experiment: t\ntrace: " + trace + "\nmodel: llama-3.1-8b\ngpu: h200\n" + use;
  const std::string msg = check(other_model);
  CHECK(msg.find("'tiny'") != std::string::npos);
  CHECK(msg.find("'llama-3.1-8b'") != std::string::npos);
  CHECK(msg.find("exp.yaml:") != std::string::npos);  // positioned at the run's executor
  write_text(dir / "gpu.yaml",
             "name: other-gpu\nmemory: 1MiB\nbf16_tflops: 1000000\n"
             "hbm_gbps: 1000000000\npcie_gbps: 1000\n");
  const std::string gpu_msg =
      check(tiny_config(trace, "gpu: " + (dir / "gpu.yaml").string() + "\n" + kGolden + use));
  CHECK(gpu_msg.find("'tiny-gpu'") != std::string::npos);
  CHECK(gpu_msg.find("'other-gpu'") != std::string::npos);
  const std::string absent = check(tiny_config(
      trace, std::string(kGolden) + "executor: {kind: calibrated, profile: nowhere/p.yaml}\n"));
  CHECK(absent.find("nowhere/p.yaml") != std::string::npos);
  CHECK(check(tiny_config(trace, std::string(kGolden) + use)).empty());
}

TEST_CASE("inferscale calibrate: cost_model profile, errors exit 2 and write nothing") {
  const auto dir = temp_dir("calibrate_cli");
  const auto model = source_path("tests/sim/data/tiny_model.yaml");
  const auto gpu = source_path("tests/sim/data/tiny_gpu.yaml");
  const auto out = (dir / "profiles" / "tiny.yaml").string();
  const std::string common = "calibrate --model " + model + " --gpu " + gpu + " --grid small";
  REQUIRE(run_cli(common + " --executor cost_model --repeats 1 --warmup 0 --out " + out +
                      " --points " + (dir / "points.csv").string(),
                  dir / "log.txt") == 0);
  const std::string log = read_text(dir / "log.txt");
  CHECK(log.find("held out") != std::string::npos);
  const CalibrationProfile p = load_profile(out, "test");
  CHECK(p.model.name == "tiny");
  CHECK(p.gpu == "tiny-gpu");
  CHECK(p.executor == "cost_model");
  CHECK(p.grid.name == "small");
  CHECK(p.held_out_mape_pct < 1.0);
  // Every step of the tiny model costs the tiny GPU's 1 ms overhead: that is the fit.
  CHECK(p.coefficients[kFeatureStep] == Approx(1e6).epsilon(1e-6));
  CHECK(p.command.find("--executor cost_model") != std::string::npos);
  CHECK(read_csv(dir / "points.csv").size() == p.grid.points);
  CHECK_FALSE(p.async_copies.present);

  // --copy-lanes: the copy_lanes grid timed too and the lanes' speed written with its source.
  const auto lanes_out = (dir / "lanes.yaml").string();
  REQUIRE(run_cli(common + " --executor cost_model --repeats 1 --warmup 0 --copy-lanes --out " +
                      lanes_out,
                  dir / "lanes.txt") == 0);
  CHECK(read_text(dir / "lanes.txt").find("copy lanes: lane_speed") != std::string::npos);
  const CalibrationProfile lanes = load_profile(lanes_out, "test");
  CHECK(lanes.async_copies.present);
  CHECK(lanes.async_copies.source.find("--copy-lanes") != std::string::npos);
  CHECK(lanes.command.find("--copy-lanes") != std::string::npos);

  // The profile drives the golden run exactly as the cost model does.
  const auto trace = source_path("tests/sim/data/golden.jsonl");
  const auto runs =
      run_file(dir, tiny_config(trace, std::string(kGolden) +
                                           "executor: {kind: calibrated, profile: " + out + "}\n"));
  CHECK(runs[0].summary.throughput_rps == Approx(2.0 / 0.003));

  const auto bad = (dir / "bad.yaml").string();
  CHECK(run_cli(common + " --executor cost_model --grid huge --out " + bad, dir / "e1.txt") == 2);
  CHECK(read_text(dir / "e1.txt").find("--grid") != std::string::npos);
  CHECK(run_cli(common + " --executor nothing --out " + bad, dir / "e2.txt") == 2);
  CHECK(read_text(dir / "e2.txt").find("cost_model") != std::string::npos);
  CHECK(run_cli(common + " --executor cost_model --repeats 0 --out " + bad, dir / "e3.txt") == 2);
  CHECK(run_cli(common + " --executor cost_model --recheck 5000 --out " + bad, dir / "e7.txt") ==
        2);
  CHECK(read_text(dir / "e7.txt").find("--recheck") != std::string::npos);
  // copy_lanes is measured beside a grid (--copy-lanes), not fitted alone; refitted only from
  // the lanes' points written beside the grid's (points.csv has none).
  CHECK(run_cli("calibrate --model " + model + " --gpu " + gpu +
                    " --executor cost_model --grid copy_lanes --out " + bad,
                dir / "e5.txt") == 2);
  CHECK(read_text(dir / "e5.txt").find("--copy-lanes") != std::string::npos);
  CHECK(run_cli(common + " --executor cost_model --repeats 1 --warmup 0 --copy-lanes --refit " +
                    (dir / "points.csv").string() + " --machine m --out " + bad,
                dir / "e6.txt") == 2);
  CHECK(read_text(dir / "e6.txt").find("points_copy_lanes.csv") != std::string::npos);
  CHECK(run_cli("calibrate --executor cost_model --model nosuch --out " + bad, dir / "e4.txt") ==
        2);
  CHECK_FALSE(std::filesystem::exists(bad));
}

TEST_CASE("inferscale calibrate --refit: the points of a profile fit again to the same profile") {
  const auto dir = temp_dir("calibrate_refit");
  const auto model = source_path("tests/sim/data/tiny_model.yaml");
  const auto gpu = source_path("tests/sim/data/tiny_gpu.yaml");
  const std::string common = "calibrate --executor cost_model --model " + model + " --gpu " + gpu +
                             " --grid small --repeats 2 --warmup 1";
  const auto points = (dir / "points.csv").string();
  const auto first = (dir / "first.yaml").string(), again = (dir / "again.yaml").string();
  REQUIRE(run_cli(common + " --out " + first + " --points " + points, dir / "log1.txt") == 0);
  REQUIRE(run_cli(common + " --refit " + points + " --machine \"a machine\" --out " + again,
                  dir / "log2.txt") == 0);
  const CalibrationProfile a = load_profile(first, "test"), b = load_profile(again, "test");
  CHECK(b.machine == "a machine");
  CHECK(b.command.find("--refit " + points) != std::string::npos);
  for (std::size_t i = 0; i < kFeatureCount; ++i) {
    INFO(calibration_feature_names()[i]);
    CHECK(b.coefficients[i] == Approx(a.coefficients[i]).margin(1e-9));
  }
  CHECK(b.held_out_mape_pct == Approx(a.held_out_mape_pct).margin(1e-9));
  CHECK_FALSE(b.async_copies.present);

  // Written over a profile with an async_copies section (which the grid does not measure): the
  // section is kept.
  CalibrationProfile with_copies = b;
  with_copies.async_copies.present = true;
  with_copies.async_copies.duplex = 0.5;
  with_copies.async_copies.stall_ns = 1e6;
  write_profile(again, with_copies);
  REQUIRE(run_cli(common + " --refit " + points + " --machine m --out " + again,
                  dir / "log3.txt") == 0);
  const CalibrationProfile kept = load_profile(again, "test");
  CHECK(kept.async_copies.present);
  CHECK(kept.async_copies.duplex == 0.5);
  CHECK(kept.async_copies.stall_ns == 1e6);

  // --copy-lanes with --points: the lanes' points beside the grid's; --refit --copy-lanes fits
  // them again over the profile they were measured with, to the same fields.
  const auto lanes_points = (dir / "lanes.csv").string();
  const auto lanes_first = (dir / "lanes_first.yaml").string();
  REQUIRE(run_cli(common + " --copy-lanes --out " + lanes_first + " --points " + lanes_points,
                  dir / "log4.txt") == 0);
  const auto lanes_csv = read_csv(dir / "lanes_copy_lanes.csv");
  CHECK(lanes_csv.size() == make_calibration_grid("copy_lanes").points.size());
  const auto lanes_again = (dir / "lanes_again.yaml").string();
  std::filesystem::copy_file(lanes_first, lanes_again);
  REQUIRE(run_cli(common + " --copy-lanes --refit " + lanes_points + " --machine m --out " +
                      lanes_again,
                  dir / "log5.txt") == 0);
  const CalibrationProfile l1 = load_profile(lanes_first, "test"),
                           l2 = load_profile(lanes_again, "test");
  CHECK(l2.async_copies.lane_speed == Approx(l1.async_copies.lane_speed).margin(1e-9));
  CHECK(l2.async_copies.duplex == Approx(l1.async_copies.duplex).margin(1e-9));
  CHECK(l2.async_copies.stall_ns == Approx(l1.async_copies.stall_ns).margin(1e-9));
  CHECK(l2.async_copies.issue_ns == l1.async_copies.issue_ns);
  CHECK(l2.command.find("--copy-lanes") != std::string::npos);
  // Refitted again over its own output: the same source (what it kept is not nested again).
  REQUIRE(run_cli(common + " --copy-lanes --refit " + lanes_points + " --machine m --out " +
                      lanes_again,
                  dir / "log6.txt") == 0);
  CHECK(load_profile(lanes_again, "test").async_copies.source == l2.async_copies.source);
  // A lanes file written before the grid grew holds fewer of its points: refitted from those.
  std::filesystem::copy_file(lanes_points, dir / "old.csv");
  const std::string lanes_text = read_text(dir / "lanes_copy_lanes.csv");
  std::size_t cut = 0;
  for (int row = 0; row <= 19; ++row) cut = lanes_text.find('\n', cut) + 1;  // header + 19
  write_text(dir / "old_copy_lanes.csv", lanes_text.substr(0, cut));
  REQUIRE(run_cli(common + " --copy-lanes --refit " + (dir / "old.csv").string() +
                      " --machine m --out " + lanes_again,
                  dir / "log7.txt") == 0);
  CHECK(read_text(dir / "log7.txt").find("refitting 19 copy-lane points") != std::string::npos);
  CHECK(load_profile(lanes_again, "test").async_copies.source.find("(19 points") !=
        std::string::npos);
  // A point the grid does not have: exit 2 at its line.
  std::string unknown = lanes_text.substr(0, cut);
  unknown.replace(unknown.find("async load", unknown.find('\n')), 10, "async lode");
  write_text(dir / "old_copy_lanes.csv", unknown);
  CHECK(run_cli(common + " --copy-lanes --refit " + (dir / "old.csv").string() +
                    " --machine m --out " + lanes_again,
                dir / "e7.txt") == 2);
  CHECK(read_text(dir / "e7.txt").find("old_copy_lanes.csv:2") != std::string::npos);
  // Without the profile the lanes were measured with (its issue_ns): exit 2, nothing written.
  const auto nowhere = (dir / "nowhere.yaml").string();
  CHECK(run_cli(common + " --copy-lanes --refit " + lanes_points + " --machine m --out " + nowhere,
                dir / "e5.txt") == 2);
  CHECK(read_text(dir / "e5.txt").find("--out") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(nowhere));

  // A points file of another grid, other repeats or a damaged line: exit 2 at the place.
  std::string csv = read_text(points);
  const auto second_line = csv.find('\n', csv.find('\n') + 1) + 1;
  std::string damaged = csv;
  damaged.replace(damaged.find('"', second_line) + 1, 6, "zzzzzz");
  const auto bad_points = (dir / "damaged.csv").string();
  write_text(dir / "damaged.csv", damaged);
  const auto bad = (dir / "bad.yaml").string();
  CHECK(run_cli(common + " --refit " + bad_points + " --machine m --out " + bad, dir / "e1.txt") ==
        2);
  CHECK(read_text(dir / "e1.txt").find("damaged.csv:3") != std::string::npos);
  CHECK(run_cli(common + " --refit " + points + " --out " + bad, dir / "e2.txt") == 2);
  CHECK(read_text(dir / "e2.txt").find("--machine") != std::string::npos);
  const std::string other = "calibrate --executor cost_model --model " + model + " --gpu " + gpu +
                            " --grid small --repeats 3 --warmup 1";
  CHECK(run_cli(other + " --refit " + points + " --machine m --out " + bad, dir / "e3.txt") == 2);
  CHECK(read_text(dir / "e3.txt").find("--repeats") != std::string::npos);
  CHECK(run_cli("calibrate --executor cost_model --grid full --refit " + points +
                    " --machine m --out " + bad,
                dir / "e4.txt") == 2);
  CHECK_FALSE(std::filesystem::exists(bad));
}
