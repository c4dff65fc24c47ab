#include "sim/config/profile.h"

#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>

#include "sim/config/experiment.h"
#include "sim/config/yaml_view.h"
#include "traces/error.h"

namespace inferscale {

namespace fs = std::filesystem;

namespace {

/// Shortest decimal that reads back as the same double.
std::string number(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

/// A double-quoted YAML scalar.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string required_text(const YamlView& v, const std::string& key) {
  if (!v.has(key)) v.fail("", "missing key '" + key + "'");
  return v.text(key, "");
}

double required_number(const YamlView& v, const std::string& key, double lo, double hi) {
  if (!v.has(key)) v.fail("", "missing key '" + key + "'");
  return v.number(key, 0, lo, hi);
}

std::uint32_t required_count(const YamlView& v, const std::string& key, std::int64_t lo) {
  if (!v.has(key)) v.fail("", "missing key '" + key + "'");
  return static_cast<std::uint32_t>(
      v.integer(key, 0, lo, std::numeric_limits<std::int32_t>::max()));
}

YamlView required_child(const YamlView& v, const std::string& key) {
  if (!v.has(key)) v.fail("", "missing key '" + key + "'");
  return v.child(key);
}

}  // namespace

std::string profile_path(const std::string& name_or_path) {
  if (name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".yaml")) {
    return name_or_path;
  }
  return config_dir() + "/profiles/" + name_or_path + ".yaml";
}

CalibrationProfile load_profile(const std::string& name_or_path, const std::string& where) {
  const std::string path = profile_path(name_or_path);
  if (!path_exists(path, where)) {
    throw InputError(where, "calibration profile '" + path +
                                "' not found (write one with `inferscale calibrate --out " + path +
                                "`)");
  }
  const YamlView v({{load_yaml_file(path), path}}, "");
  v.reject_unknown({"format", "features", "model", "gpu", "executor", "machine", "date", "command",
                    "knee", "coefficients", "grid", "error", "async_copies"});
  if (!v.has("format")) v.fail("", "missing key 'format' (is this a calibration profile?)");
  const auto format = v.integer("format", 0, 0, 1 << 20);
  if (format != kProfileFormat) {
    v.fail("format", "profile format " + std::to_string(format) + ", this build reads format " +
                         std::to_string(kProfileFormat));
  }
  CalibrationProfile p;
  p.features = required_text(v, "features");
  if (p.features != kCalibrationFeatures) {
    v.fail("features", "features '" + p.features + "', this build computes '" +
                           kCalibrationFeatures + "' (calibrate again)");
  }

  const YamlView m = required_child(v, "model");
  m.reject_unknown(
      {"name", "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab", "dtype_bytes"});
  p.model.name = required_text(m, "name");
  p.model.layers = required_count(m, "layers", 1);
  p.model.hidden = required_count(m, "hidden", 1);
  p.model.heads = required_count(m, "heads", 1);
  p.model.kv_heads = required_count(m, "kv_heads", 1);
  p.model.head_dim = required_count(m, "head_dim", 1);
  p.model.ffn = required_count(m, "ffn", 1);
  p.model.vocab = required_count(m, "vocab", 1);
  p.model.dtype_bytes = required_count(m, "dtype_bytes", 1);

  p.gpu = required_text(v, "gpu");
  p.executor = required_text(v, "executor");
  p.machine = v.text("machine", "");
  p.date = v.text("date", "");
  p.command = v.text("command", "");

  const YamlView k = required_child(v, "knee");
  k.reject_unknown({"gemm_flops_per_s", "hbm_bytes_per_s", "pcie_bytes_per_s", "decode_floor_ns"});
  constexpr double kBig = 1e30;
  p.knee.gemm_flops_per_s = required_number(k, "gemm_flops_per_s", 1, kBig);
  p.knee.hbm_bytes_per_s = required_number(k, "hbm_bytes_per_s", 1, kBig);
  p.knee.pcie_bytes_per_s = required_number(k, "pcie_bytes_per_s", 1, kBig);
  p.knee.decode_floor_ns = k.number("decode_floor_ns", 0.0, 0, kBig);  // 0 before it existed

  const YamlView c = required_child(v, "coefficients");
  const auto& names = calibration_feature_names();
  c.reject_unknown(std::vector<std::string>(names.begin(), names.end()));
  for (std::size_t i = 0; i < kFeatureCount; ++i) {
    p.coefficients[i] = required_number(c, names[i], 0, kBig);
  }

  if (v.has("grid")) {
    const YamlView g = v.child("grid");
    g.reject_unknown(
        {"name", "points", "train", "held_out", "split", "warmup", "repeats", "description"});
    p.grid.name = g.text("name", "");
    p.grid.points = required_count(g, "points", 0);
    p.grid.train = required_count(g, "train", 0);
    p.grid.held_out = required_count(g, "held_out", 0);
    p.grid.split = g.text("split", "");
    p.grid.warmup = required_count(g, "warmup", 0);
    p.grid.repeats = required_count(g, "repeats", 0);
    p.grid.description = g.text("description", "");
    if (p.grid.train + p.grid.held_out != p.grid.points) {
      g.fail("points", "train + held_out must equal points");
    }
  }
  if (v.has("error")) {
    const YamlView e = v.child("error");
    e.reject_unknown({"train_mape_pct", "held_out_mape_pct", "held_out_max_ape_pct"});
    p.train_mape_pct = required_number(e, "train_mape_pct", 0, kBig);
    p.held_out_mape_pct = required_number(e, "held_out_mape_pct", 0, kBig);
    p.held_out_max_ape_pct = required_number(e, "held_out_max_ape_pct", 0, kBig);
  }
  if (v.has("async_copies")) {
    const YamlView a = v.child("async_copies");
    a.reject_unknown(
        {"duplex", "lane_speed", "block_ns", "issue_ns", "stall_ns", "batch_facts", "source"});
    auto& ac = p.async_copies;
    ac.present = true;
    ac.duplex = a.number("duplex", ac.duplex, 0.01, 1);
    ac.lane_speed = a.number("lane_speed", ac.lane_speed, 0.01, 100);
    ac.block_ns = a.number("block_ns", ac.block_ns, 0, 1e9);
    ac.issue_ns = a.number("issue_ns", ac.issue_ns, 0, 1e9);
    ac.stall_ns = a.number("stall_ns", ac.stall_ns, 0, 1e12);
    ac.batch_facts =
        static_cast<std::uint32_t>(a.integer("batch_facts", ac.batch_facts, 1, 1 << 20));
    ac.source = a.text("source", "");
  }
  return p;
}

std::string profile_yaml(const CalibrationProfile& p) {
  std::string y;
  auto line = [&y](const std::string& s) { y += s + "\n"; };
  line(
      "# InferScale calibration profile, written by `inferscale calibrate`. A step's time in ns "
      "is");
  line("# the sum of coefficient x feature; the features (" + p.features +
       ") and the fit are described in");
  line(
      "# executor/cost_model/README.md. Use it with `executor: {kind: calibrated, profile: "
      "<file>}`.");
  line("format: " + std::to_string(kProfileFormat));
  line("features: " + p.features);
  line("model:");
  line("  name: " + quoted(p.model.name));
  line("  layers: " + std::to_string(p.model.layers));
  line("  hidden: " + std::to_string(p.model.hidden));
  line("  heads: " + std::to_string(p.model.heads));
  line("  kv_heads: " + std::to_string(p.model.kv_heads));
  line("  head_dim: " + std::to_string(p.model.head_dim));
  line("  ffn: " + std::to_string(p.model.ffn));
  line("  vocab: " + std::to_string(p.model.vocab));
  line("  dtype_bytes: " + std::to_string(p.model.dtype_bytes));
  line("gpu: " + quoted(p.gpu));
  line("executor: " + quoted(p.executor) + "  # what was profiled");
  line("machine: " + quoted(p.machine));
  line("date: " + quoted(p.date));
  line("command: " + quoted(p.command));
  line("knee:  # the rates the features are counted in: F, B, P");
  line("  gemm_flops_per_s: " + number(p.knee.gemm_flops_per_s));
  line("  hbm_bytes_per_s: " + number(p.knee.hbm_bytes_per_s));
  line("  pcie_bytes_per_s: " + number(p.knee.pcie_bytes_per_s));
  line("  decode_floor_ns: " + number(p.knee.decode_floor_ns) +
       "  # the kv feature's least per decode item");
  line("coefficients:  # x feature");
  const auto& names = calibration_feature_names();
  const auto& meanings = calibration_feature_meanings();
  for (std::size_t i = 0; i < kFeatureCount; ++i) {
    line("  " + std::string(names[i]) + ": " + number(p.coefficients[i]) + "  # " + meanings[i]);
  }
  line("grid:");
  line("  name: " + quoted(p.grid.name));
  line("  points: " + std::to_string(p.grid.points));
  line("  train: " + std::to_string(p.grid.train));
  line("  held_out: " + std::to_string(p.grid.held_out));
  line("  split: " + quoted(p.grid.split));
  line("  warmup: " + std::to_string(p.grid.warmup));
  line("  repeats: " + std::to_string(p.grid.repeats) + "  # a point's time: median of these");
  line("  description: " + quoted(p.grid.description));
  line("error:  # of batch (step) time, predicted vs measured");
  line("  train_mape_pct: " + number(p.train_mape_pct));
  line("  held_out_mape_pct: " + number(p.held_out_mape_pct));
  line("  held_out_max_ape_pct: " + number(p.held_out_max_ape_pct));
  if (p.async_copies.present) {
    const auto& a = p.async_copies;
    line(
        "async_copies:  # asynchronous host-tier copies; not measured by the grid (see "
        "executor/cost_model/README.md)");
    line("  duplex: " + number(a.duplex) +
         "  # each copy lane's rate while both move, a fraction of its rate alone");
    line("  lane_speed: " + number(a.lane_speed) +
         "  # a lane's rate alone, a multiple of a load's inside a step (pcie, transfers)");
    line("  block_ns: " + number(a.block_ns) +
         "  # a lane's time per 16-token block copied (one copy each), besides its bytes");
    line("  issue_ns: " + number(a.issue_ns) + "  # host time to issue one asynchronous copy");
    line("  stall_ns: " + number(a.stall_ns) +
         "  # added to a step whose forward pass starts while copies move");
    line("  batch_facts: " + std::to_string(a.batch_facts) + "  # facts per copy batch (ticket)");
    line("  source: " + quoted(a.source));
  }
  return y;
}

void write_profile(const std::string& path, const CalibrationProfile& profile) {
  const fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path());
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << profile_yaml(profile);
    if (!f.flush()) throw InputError(path, "cannot write the profile");
  }
  fs::rename(tmp, path);
}

void check_profile_model(const CalibrationProfile& profile, const std::string& path,
                         const ModelConfig& model, const std::string& where) {
  const std::string why = profile_model_mismatch(profile, model);
  if (!why.empty()) {
    throw InputError(where, "profile " + path + " does not match the run's model: " + why +
                                " (calibrate this model, or use its profile)");
  }
}

}  // namespace inferscale
