// `inferscale calibrate`: profiles an executor over the calibration grid, fits the calibrated
// cost model, and writes the profile (configs/profiles/<gpu>-<model>.yaml). Registers itself.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "executor/cost_model/calibration_copy_lanes.h"
#include "executor/cost_model/calibration_profiler.h"
#include "cli/calibrate.h"
#include "cli/commands.h"
#include "sim/config/experiment.h"
#include "sim/config/profile.h"
#include "traces/error.h"

namespace inferscale::cli {

namespace {

std::map<std::string, CalibrationExecutorFactory>& factories() {
  static std::map<std::string, CalibrationExecutorFactory> f;  // function-local: init order
  return f;
}

struct CalibrateArgs {
  std::string executor;
  std::string model = "llama-3.1-8b";
  std::string gpu = "h200";
  std::string out;
  std::string grid = "full";
  std::uint32_t repeats = 5;
  std::uint32_t warmup = 2;
  std::uint32_t recheck = ProfileOptions{}.recheck;  // first points measured again at the end
  std::string device = "cuda";
  std::uint64_t seed = 0;
  std::string points;         // optional CSV of every point
  std::string refit;          // a points CSV to fit again instead of profiling
  std::string machine;        // with --refit: the device the points were measured on
  bool copy_lanes = false;    // also profile the copy_lanes grid and fit async_copies from it
  bool copies_first = false;  // the executor issues every step's copies first (before 0337801)
};

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string command_line(const CalibrateArgs& a) {
  std::string c = "inferscale calibrate --executor " + a.executor + " --model " + a.model +
                  " --gpu " + a.gpu + " --grid " + a.grid + " --repeats " +
                  std::to_string(a.repeats) + " --warmup " + std::to_string(a.warmup);
  if (!a.refit.empty()) c += " --refit " + a.refit + " --machine \"" + a.machine + "\"";
  if (a.executor != "cost_model" && a.refit.empty()) c += " --device " + a.device;
  if (a.refit.empty()) c += " --recheck " + std::to_string(a.recheck);
  if (!a.points.empty()) c += " --points " + a.points;
  if (a.copy_lanes) c += " --copy-lanes";
  if (a.copies_first) c += " --copies-first";
  return c + " --out " + a.out;
}

void write_text(const std::string& path, const std::string& text, const std::string& where) {
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << text;
    if (!f.flush()) throw InputError(where, "cannot write " + path);
  }
  std::filesystem::rename(tmp, path);
}

/// Splits one CSV line (fields may be double-quoted; no quote inside a field).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

/// The timed samples of every point of a `--points` CSV, checked against the grid's labels.
/// With `subset`: the file may hold any of the grid's points, in any order (a copy_lanes file
/// written before the grid grew); `*subset` becomes the grid of those points, in the file's order.
std::vector<std::vector<double>> read_points_samples(const std::string& path,
                                                     const CalibrationGrid& grid,
                                                     CalibrationGrid* subset = nullptr) {
  if (subset != nullptr) {
    *subset = grid;
    subset->points.clear();
  }
  std::ifstream f(path);
  if (!f) throw InputError("--refit", "cannot open " + path);
  std::string line;
  if (!std::getline(f, line)) throw InputError(path + ":1", "empty file, expected a header");
  const std::vector<std::string> header = csv_fields(line);
  auto column = [&](const std::string& name) {
    for (std::size_t i = 0; i < header.size(); ++i) {
      if (header[i] == name) return i;
    }
    throw InputError(path + ":1", "no column '" + name + "' (expected a calibrate --points CSV)");
  };
  const std::size_t c_point = column("point"), c_label = column("label"),
                    c_samples = column("samples_ns");
  std::vector<std::vector<double>> samples;
  for (long n = 2; std::getline(f, line); ++n) {
    if (line.empty()) continue;
    const std::string where = position(path, n);
    const std::vector<std::string> row = csv_fields(line);
    if (row.size() != header.size()) {
      throw InputError(
          where, std::to_string(row.size()) + " fields, expected " + std::to_string(header.size()));
    }
    const std::size_t i = samples.size();
    if (row[c_point] != std::to_string(i)) {
      throw InputError(where, "point '" + row[c_point] + "', expected " + std::to_string(i));
    }
    if (subset != nullptr) {
      const auto it = std::find_if(grid.points.begin(), grid.points.end(), [&](const auto& p) {
        return p.label(grid.shape) == row[c_label];
      });
      if (it == grid.points.end()) {
        throw InputError(where,
                         "point '" + row[c_label] + "' is not a point of grid '" + grid.name + "'");
      }
      subset->points.push_back(*it);
    } else if (i >= grid.points.size() || row[c_label] != grid.points[i].label(grid.shape)) {
      throw InputError(where, "point '" + row[c_label] + "' is not point " + std::to_string(i) +
                                  " of grid '" + grid.name + "' (--grid)");
    }
    std::vector<double> v;
    std::istringstream in(row[c_samples]);
    for (std::string tok; in >> tok;) {
      char* end = nullptr;
      const double x = std::strtod(tok.c_str(), &end);
      if (end == tok.c_str() || *end != '\0' || !(x > 0)) {
        throw InputError(where, "samples_ns: '" + tok + "' is not a positive number of ns");
      }
      v.push_back(x);
    }
    samples.push_back(std::move(v));
  }
  if (subset != nullptr && samples.empty()) throw InputError(path, "no points");
  if (subset == nullptr && samples.size() != grid.points.size()) {
    throw InputError(path, std::to_string(samples.size()) + " points, grid '" + grid.name +
                               "' has " + std::to_string(grid.points.size()));
  }
  return samples;
}

/// Where --points puts the copy_lanes grid's points (with --copy-lanes): beside the step grid's,
/// `<points>_copy_lanes.csv` (`.csv` dropped first); --refit with --copy-lanes reads it there.
std::string lanes_points_path(const std::string& points) {
  std::string stem = points;
  if (stem.size() > 4 && stem.compare(stem.size() - 4, 4, ".csv") == 0)
    stem.resize(stem.size() - 4);
  return stem + "_copy_lanes.csv";
}

/// The copy_lanes grid's points: measured (median) and priced at the fitted fields, and the
/// timed samples (what --refit reads).
std::string lanes_points_csv(const CalibrationGrid& grid,
                             const std::vector<PointMeasurement>& measured,
                             const std::vector<double>& predicted_ns) {
  std::ostringstream o;
  o << "point,label,measured_ns,predicted_ns,error_pct,samples_ns\n";
  for (std::size_t i = 0; i < measured.size(); ++i) {
    const double m = measured[i].duration_ns, q = predicted_ns[i];
    char numbers[96];  // the label apart: it may be long
    std::snprintf(numbers, sizeof numbers, "%.0f,%.0f,%.3f,", m, q, 100.0 * (q - m) / m);
    o << i << ",\"" << grid.points[i].label(grid.shape) << "\"," << numbers;
    for (std::size_t j = 0; j < measured[i].samples_ns.size(); ++j) {
      o << (j ? " " : "") << static_cast<long long>(std::llround(measured[i].samples_ns[j]));
    }
    o << "\n";
  }
  return o.str();
}

/// Executor time of the whole grid as the datasheet roofline prices it (a forecast).
double forecast_s(const CalibrationGrid& grid, const ModelConfig& model, const GpuConfig& gpu,
                  std::uint32_t timed) {
  const CostModel roofline(model, CostRates::from_gpu(gpu));
  CalibrationPlanner planner(model, grid.shape);
  double ns = 0;
  for (const auto& s : planner.preamble())
    ns += double(roofline.price(roofline.work(s.plan)).duration_ns);
  for (const auto& pt : grid.points) {
    for (const auto& s : planner.steps(pt, timed)) {
      ns += double(roofline.price(roofline.work(s.plan)).duration_ns);
    }
  }
  return ns / 1e9;
}

/// The copy_lanes grid measured (with --copy-lanes).
struct LaneMeasurements {
  CalibrationGrid grid;
  std::vector<PointMeasurement> measured;
  CopyIssue issue;  // while the grid ran; no copies: not measured
};

int fit_and_write(const CalibrateArgs& a, const CalibrationGrid& grid, const ModelConfig& model,
                  const GpuConfig& gpu, const std::vector<PointMeasurement>& measured,
                  const std::string& machine, double wall_s, const LaneMeasurements* lanes);

/// What an executor needs to run both grids, one after the other.
CalibrationNeeds max_needs(CalibrationNeeds a, const CalibrationNeeds& b) {
  a.cache_tokens = std::max(a.cache_tokens, b.cache_tokens);
  a.requests = std::max(a.requests, b.requests);
  a.pool_blocks = std::max(a.pool_blocks, b.pool_blocks);
  a.host_facts = std::max(a.host_facts, b.host_facts);
  a.host_blocks = std::max(a.host_blocks, b.host_blocks);
  a.max_position = std::max(a.max_position, b.max_position);
  a.decode_steps = std::max(a.decode_steps, b.decode_steps);
  a.steps += b.steps;
  a.measured_steps += b.measured_steps;
  return a;
}

/// How the grids are measured and the copy lanes fitted: the arguments' warm-up, repeats,
/// recheck and copy order.
ProfileOptions profile_options(const CalibrateArgs& a) {
  ProfileOptions o{a.warmup, a.repeats};
  o.recheck = a.recheck;
  o.copies_beside_pass = !a.copies_first;
  return o;
}

/// Says how many of a grid's first points took another median when measured again at the end.
void report_rechecked(const std::vector<PointMeasurement>& measured,
                      const ProfileOptions& options) {
  std::size_t moved = 0;
  for (const PointMeasurement& m : measured) moved += m.first_ns > 0 ? 1 : 0;
  if (moved == 0) return;
  std::fprintf(stderr,
               "measured again: %zu of the grid's first points moved by more than %.0f %% (the "
               "machine was not steady when they were first measured); their later medians are "
               "kept\n",
               moved, 100 * options.tolerance);
}

int run_calibrate(const CalibrateArgs& a) {
  const ModelConfig model = load_model(a.model, "--model");
  const GpuConfig gpu = load_gpu(a.gpu, "--gpu");
  if (a.repeats < 1 || a.repeats > 50) throw InputError("--repeats", "expected 1 to 50");
  if (a.warmup > 10) throw InputError("--warmup", "expected 0 to 10");
  if (a.recheck > 1000) throw InputError("--recheck", "expected 0 to 1000");
  CalibrationGrid grid;
  try {
    grid = make_calibration_grid(a.grid);
  } catch (const std::invalid_argument& e) {
    throw InputError("--grid", e.what());
  }
  const ProfileOptions options = profile_options(a);
  if (grid.name == "copy_lanes") {
    throw InputError("--grid", "copy_lanes is not fitted alone: give --copy-lanes with a grid");
  }
  if (!a.refit.empty()) {
    if (a.machine.empty()) throw InputError("--machine", "required with --refit");
    // A points file's samples as measurements of `g`'s points; its faults at the file.
    auto replayed = [&](const CalibrationGrid& g, const std::string& path,
                        CalibrationGrid* subset = nullptr) {
      try {
        auto samples = read_points_samples(path, g, subset);
        return replay_measurements(subset ? *subset : g, model, options, samples);
      } catch (const std::invalid_argument& e) {
        throw InputError(path, e.what());
      }
    };
    const std::vector<PointMeasurement> measured = replayed(grid, a.refit);
    std::fprintf(stderr, "refitting %zu points of %s (measured on %s)\n", measured.size(),
                 a.refit.c_str(), a.machine.c_str());
    if (!a.copy_lanes) return fit_and_write(a, grid, model, gpu, measured, a.machine, 0.0, nullptr);
    // The lanes' points beside the steps', those the file holds (earlier calibrations measured
    // fewer of the grid's); issue_ns is not in them: the profile written over keeps the one
    // measured with them.
    LaneMeasurements lanes;
    const std::string path = lanes_points_path(a.refit);
    lanes.measured = replayed(make_calibration_grid("copy_lanes"), path, &lanes.grid);
    if (!std::filesystem::exists(a.out)) {
      throw InputError("--out",
                       "with --refit and --copy-lanes: the profile the lanes were "
                       "measured with (its issue_ns is kept), not found: " +
                           a.out);
    }
    std::fprintf(stderr, "refitting %zu copy-lane points of %s\n", lanes.measured.size(),
                 path.c_str());
    return fit_and_write(a, grid, model, gpu, measured, a.machine, 0.0, &lanes);
  }
  const std::uint32_t timed = a.warmup + a.repeats;
  LaneMeasurements lanes;
  CalibrationNeeds needs = calibration_needs(grid, model, timed);
  if (a.copy_lanes) {
    lanes.grid = make_calibration_grid("copy_lanes");
    needs = max_needs(needs, calibration_needs(lanes.grid, model, timed));
  }
  CalibrationTarget target{model, gpu, needs, a.device, a.seed, options.copies_beside_pass};

  ProfiledExecutor profiled;
  if (a.executor == "cost_model") {
    profiled.executor =
        std::make_unique<CostModelExecutor>(CostModel(model, CostRates::from_gpu(gpu)));
    profiled.machine = "roofline cost model of " + gpu.name + " (no hardware)";
  } else if (auto it = factories().find(a.executor); it != factories().end()) {
    if (a.device != "cuda" && a.device != "cpu") {
      throw InputError("--device", "expected cuda or cpu, got '" + a.device + "'");
    }
    std::fprintf(stderr, "building the %s executor for %s on %s\n", a.executor.c_str(),
                 model.name.c_str(), a.device.c_str());
    profiled = it->second(target);
  } else {
    std::string list;
    for (const auto& n : calibration_executor_names()) list += (list.empty() ? "" : ", ") + n;
    throw InputError(
        "--executor",
        "executor '" + a.executor + "' cannot be profiled by this build (available: " + list + ")");
  }
  std::fprintf(stderr,
               "calibrating %s on %s: grid %s, %zu points x (%u warm-up + %u timed) steps, "
               "%llu steps in all; the %s roofline forecasts %.0f s of executor time\n",
               model.name.c_str(), profiled.machine.c_str(), grid.name.c_str(), grid.points.size(),
               a.warmup, a.repeats, static_cast<unsigned long long>(target.needs.steps),
               gpu.name.c_str(), forecast_s(grid, model, gpu, timed));

  const auto start = std::chrono::steady_clock::now();
  const auto log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  const auto measured = profile_executor(*profiled.executor, grid, model, options, log);
  report_rechecked(measured, options);
  if (a.copy_lanes) {
    std::fprintf(stderr, "copy lanes: grid copy_lanes, %zu points\n", lanes.grid.points.size());
    const CopyIssue before = profiled.copy_issue ? profiled.copy_issue() : CopyIssue{};
    lanes.measured = profile_executor(*profiled.executor, lanes.grid, model, options, log);
    report_rechecked(lanes.measured, options);
    if (profiled.copy_issue) {
      const CopyIssue after = profiled.copy_issue();
      lanes.issue = {after.ns - before.ns, after.copies - before.copies};
    }
  }
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return fit_and_write(a, grid, model, gpu, measured, profiled.machine, wall_s,
                       a.copy_lanes ? &lanes : nullptr);
}

/// Fits the profile to the measurements and writes it (and the points CSV when asked).
int fit_and_write(const CalibrateArgs& a, const CalibrationGrid& grid, const ModelConfig& model,
                  const GpuConfig& gpu, const std::vector<PointMeasurement>& measured,
                  const std::string& machine, double wall_s, const LaneMeasurements* lanes) {
  const CalibrationFit fit =
      fit_calibration(fit_samples(measured), model, KneeRates::datasheet(gpu));

  CalibrationProfile p;
  p.model = CalibrationProfile::model_of(model);
  p.gpu = gpu.name;
  p.executor = a.executor;
  p.machine = machine;
  p.date = utc_now();
  p.command = command_line(a);
  p.knee = fit.knee;
  p.coefficients = fit.coefficients;
  p.grid.name = grid.name;
  p.grid.description = grid.description;
  p.grid.points = static_cast<std::uint32_t>(grid.points.size());
  p.grid.train = static_cast<std::uint32_t>(fit.train);
  p.grid.held_out = static_cast<std::uint32_t>(fit.held_out);
  p.grid.warmup = a.warmup;
  p.grid.repeats = a.repeats;
  p.train_mape_pct = fit.train_mape_pct;
  p.held_out_mape_pct = fit.held_out_mape_pct;
  p.held_out_max_ape_pct = fit.held_out_max_ape_pct;
  // The grid does not measure asynchronous copies: a profile written over keeps its section.
  bool kept = false;
  std::vector<double> lane_predicted_ns;
  if (std::filesystem::exists(a.out)) {
    try {
      p.async_copies = load_profile(a.out, "--out").async_copies;
      kept = p.async_copies.present;
    } catch (const InputError&) {  // not a readable profile: written without one
    }
  }
  if (lanes != nullptr) {  // the lanes measured, against this fit's coefficients
    const bool issue_measured = lanes->issue.copies > 0;
    if (issue_measured) {
      p.async_copies.issue_ns = double(lanes->issue.ns) / double(lanes->issue.copies);
      std::printf("copy lanes: issue_ns %.0f (host time per asynchronous copy, %llu copies)\n",
                  p.async_copies.issue_ns, static_cast<unsigned long long>(lanes->issue.copies));
    }
    const CopyLaneFit lf =
        fit_copy_lanes(lanes->grid, lanes->measured, p, model, profile_options(a));
    lane_predicted_ns = lf.predicted_ns;
    for (std::size_t i = 0; i < lanes->measured.size(); ++i) {
      std::printf("copy lanes: %-24s measured %9.3f ms, priced %9.3f ms\n",
                  lanes->grid.points[i].label(lanes->grid.shape).c_str(),
                  lanes->measured[i].duration_ns / 1e6, lf.predicted_ns[i] / 1e6);
    }
    std::printf("copy lanes: lane_speed %.3f", lf.lane_speed);
    if (lf.block_fitted) std::printf(", block_ns %.0f", lf.block_ns);
    if (lf.stall_fitted) {
      std::printf(", stall_ns %.0f%s", lf.stall_ns,
                  lf.stall_beside_prefills ? " (with prefills beside copies)" : "");
    }
    if (lf.duplex_fitted) std::printf(", duplex %.3f", lf.duplex);
    std::printf(" (MAPE %.2f %%, worst %.2f %%)\n", lf.mape_pct, lf.max_ape_pct);
    // What was measured, and where the rest comes from (once: the kept fields' own source).
    std::vector<std::string> fitted{"lane_speed"}, others;
    (lf.block_fitted ? fitted : others).push_back("block_ns");
    (lf.stall_fitted ? fitted : others)
        .push_back(lf.stall_beside_prefills ? "stall_ns (with prefills beside copies)"
                                            : "stall_ns");
    (lf.duplex_fitted ? fitted : others).push_back("duplex");
    if (!issue_measured) others.push_back("issue_ns");
    auto join = [](const std::vector<std::string>& v) {
      std::string out;
      for (std::size_t i = 0; i < v.size(); ++i) {
        out += (i == 0 ? "" : i + 1 == v.size() ? " and " : ", ") + v[i];
      }
      return out;
    };
    char fit_text[160];
    std::snprintf(fit_text, sizeof fit_text, " (%zu points, MAPE %.2f %%, worst %.2f %%)",
                  lanes->measured.size(), lf.mape_pct, lf.max_ape_pct);
    std::string source = join(fitted) + " measured by --copy-lanes" + fit_text;
    if (issue_measured) source += "; issue_ns: the host's time per copy issued";
    if (!others.empty()) {
      source += "; " + join(others) +
                (kept ? " kept from the profile written over" : " at their defaults");
      if (kept && !p.async_copies.source.empty()) {
        // What the profile written over said, one level: a source this wrote before is
        // unwrapped to what it kept, so that refits do not nest sources.
        std::string prior = p.async_copies.source;
        const std::string nest = " kept from the profile written over (";
        if (const auto at = prior.find(nest); at != std::string::npos && prior.back() == ')') {
          prior = prior.substr(at + nest.size(), prior.size() - at - nest.size() - 1);
        }
        source += " (" + prior + ")";
      }
    }
    p.async_copies.present = true;
    p.async_copies.lane_speed = lf.lane_speed;
    p.async_copies.block_ns = lf.block_ns;
    p.async_copies.stall_ns = lf.stall_ns;
    p.async_copies.duplex = lf.duplex;
    p.async_copies.source = source;
  }
  write_profile(a.out, p);
  if (!a.points.empty()) {
    write_text(a.points, calibration_points_csv(grid, measured, fit, model), "--points");
    if (lanes != nullptr) {
      write_text(lanes_points_path(a.points),
                 lanes_points_csv(lanes->grid, lanes->measured, lane_predicted_ns), "--points");
    }
  }

  const auto& names = calibration_feature_names();
  std::printf("knee: F %.1f TFLOP/s, B %.0f GB/s, P %.1f GB/s, decode floor %.1f us\ncoefficients:",
              fit.knee.gemm_flops_per_s / 1e12, fit.knee.hbm_bytes_per_s / 1e9,
              fit.knee.pcie_bytes_per_s / 1e9, fit.knee.decode_floor_ns / 1e3);
  for (std::size_t i = 0; i < kFeatureCount; ++i) {
    std::printf(" %s=%.4g", names[i], fit.coefficients[i]);
  }
  std::printf(
      "\nbatch time MAPE: train %.2f %% (%zu points), held out %.2f %% (%zu points, "
      "worst %.2f %%)\n",
      fit.train_mape_pct, fit.train, fit.held_out_mape_pct, fit.held_out, fit.held_out_max_ape_pct);
  if (a.refit.empty()) std::printf("profiled in %.1f s; ", wall_s);
  std::printf("wrote %s%s%s\n", a.out.c_str(), a.points.empty() ? "" : " and ", a.points.c_str());
  return 0;
}

void add_calibrate_commands(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand(
      "calibrate",
      "Profile an executor over a grid of steps and fit the calibrated cost model's profile");
  auto args = std::make_shared<CalibrateArgs>();
  std::string kinds;
  for (const auto& n : calibration_executor_names()) kinds += (kinds.empty() ? "" : " | ") + n;
  cmd->add_option("--executor", args->executor, "what to profile: " + kinds)->required();
  cmd->add_option("--model", args->model, "model preset or .yaml")->capture_default_str();
  cmd->add_option("--gpu", args->gpu, "GPU preset or .yaml (datasheet rates: the knee's start)")
      ->capture_default_str();
  cmd->add_option("--out", args->out,
                  "the profile to write, e.g. configs/profiles/h200-llama-3.1-8b.yaml")
      ->required();
  cmd->add_option("--grid", args->grid, "small | full | full_mixed")->capture_default_str();
  cmd->add_flag("--copy-lanes", args->copy_lanes,
                "also time the copy_lanes grid (asynchronous host loads) and fit the profile's "
                "async_copies (lane_speed, stall_ns, duplex; issue_ns where the executor "
                "times it) to it");
  cmd->add_flag("--copies-first", args->copies_first,
                "the executor issues every step's asynchronous copies before its pass, as the GPU "
                "executor did before 0337801 (executor.copies_beside_pass: false): profile it so "
                "and fit the copy lanes with that order (with --refit: the points were measured "
                "so)");
  cmd->add_option("--repeats", args->repeats, "timed steps per point (median)")
      ->capture_default_str();
  cmd->add_option("--warmup", args->warmup, "untimed steps per point first")->capture_default_str();
  const ProfileOptions defaults;
  cmd->add_option("--recheck", args->recheck,
                  "after the grid, measure its first points again until " +
                      std::to_string(defaults.settled) + " in a row agree within " +
                      std::to_string(int(std::lround(100 * defaults.tolerance))) +
                      " %, at most this many (0: never); a point that moved keeps its later "
                      "median")
      ->capture_default_str();
  cmd->add_option("--device", args->device, "cuda | cpu (gpu executor)")->capture_default_str();
  cmd->add_option("--seed", args->seed, "seed of the random weights (gpu executor)")
      ->capture_default_str();
  cmd->add_option("--points", args->points,
                  "also write every point (CSV: measured, predicted, features; with "
                  "--copy-lanes, the lanes' points beside it in <points>_copy_lanes.csv)");
  cmd->add_option("--refit", args->refit,
                  "fit again the points of an earlier --points CSV (same grid, warm-up and "
                  "repeats) instead of profiling: for new feature definitions; with "
                  "--copy-lanes, its _copy_lanes.csv too, keeping --out's issue_ns");
  cmd->add_option("--machine", args->machine,
                  "with --refit: the device the points were measured on (the profile records it)");
  cmd->callback([&action, args] { action = [args] { return run_calibrate(*args); }; });
}

[[maybe_unused]] const bool kRegistered = register_command_group(&add_calibrate_commands);

}  // namespace

bool register_calibration_executor(const std::string& name, CalibrationExecutorFactory factory) {
  factories()[name] = factory;
  return true;
}

std::vector<std::string> calibration_executor_names() {
  std::vector<std::string> names{"cost_model"};
  for (const auto& [name, factory] : factories()) names.push_back(name);
  return names;
}

}  // namespace inferscale::cli
