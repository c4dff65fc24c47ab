// Config errors: each names file:line:column and the key path, before anything runs.
#include <cstdlib>

#include "sim/config/experiment.h"
#include "sim/runner.h"
#include "tests/catch.h"
#include "tests/sim/config_errors.h"
#include "tests/sim/sim_test_util.h"
#include "traces/error.h"

using namespace inferscale;
using namespace inferscale::test;

namespace {

std::string trace_path() {
  return source_path("tests/sim/data/golden.jsonl");
}

/// Loads and validates `yaml`; returns the InputError's text ("" when it is accepted).
std::string error_of(const std::string& name, const std::string& yaml,
                     const std::vector<std::string>& sets = {}) {
  const auto dir = temp_dir("config_" + name);
  const auto path = write_text(dir / "c.yaml", yaml);
  try {
    validate_experiment(load_experiment(path, sets));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("config errors carry file:line:column, key path and what was expected") {
  const std::string base = "experiment: e\ntrace: " + trace_path() + "\n";
  const std::vector<ConfigErrorCase> cases = {
      {"unknown_key", base + "serving:\n  kk: 3\n", ":4:3: serving.kk", "unknown key 'kk'"},
      {"wrong_type", base + "serving:\n  k: many\n", ":4:6: serving.k", "expected an integer"},
      {"negative_k", base + "serving:\n  k: -5\n", ":4:6: serving.k", "in [0, 65536]"},
      {"store_too_big", base + "store:\n  gpu: {capacity: 200GB}\n", ":4:8: store.gpu",
       "does not fit"},
      {"model_too_big",
       base + "gpu: l40s\nmodel: {layers: 200, hidden: 8192, heads: 64, ffn: "
              "28672, vocab: 128256}\n",
       ":4:8: model", "does not fit"},
      {"unknown_mode", base + "serving: {mode: magic}\n", ":3:17: serving.mode",
       "expected one of text, kv_inject"},
      {"unknown_policy", base + "store:\n  gpu: {capacity: 10GB, eviction: lruu}\n",
       ":4:35: store.gpu.eviction", "known: "},
      {"missing_trace", "experiment: e\ntrace: /nonexistent/t.jsonl\n", ":2:8: trace", "not found"},
      {"missing_locomo",
       "experiment: e\ntrace:\n  locomo: {data: /nonexistent/locomo10, users: 2}\n",
       ":3:18: trace.locomo.data", "LoCoMo data not found"},
      {"unknown_model", base + "model: llama-9\n", ":3:8: model", "presets: "},
      {"bad_size", base + "store:\n  gpu: {capacity: 12 parsecs}\n", ":4:19: store.gpu.capacity",
       "unknown size unit"},
      {"run_override", base + "runs:\n  - name: a\n    serving: {k: x}\n", ":5:18: serving.k",
       "expected an integer"},
      {"negative_warm_rows", base + "executor:\n  warm_rows: -1\n", ":4:14: executor.warm_rows",
       "in [0, 65536]"},
      {"negative_settle_ms", base + "executor:\n  settle_ms: -5\n", ":4:14: executor.settle_ms",
       "in [0, 60000]"},
      {"copies_beside_pass_not_bool", base + "executor:\n  copies_beside_pass: maybe\n",
       ":4:23: executor.copies_beside_pass", "expected true or false"},
      {"copy_inflight_zero", base + "executor:\n  copy_inflight_mb: 0\n",
       ":4:21: executor.copy_inflight_mb", "expected an integer in [1, 65536]"},
  };
  check_config_errors(
      cases, [](const std::string& name, const std::string& yaml) { return error_of(name, yaml); });
}

TEST_CASE("overrides given with --set are typed and positioned") {
  const std::string base = "experiment: e\ntrace: " + trace_path() + "\n";
  CHECK(error_of("set_ok", base, {"serving.k=20"}).empty());
  const auto err = error_of("set_bad", base, {"serving.k=-1"});
  CHECK(err.find("--set serving.k=-1: serving.k") != std::string::npos);
  const auto run_err = error_of("set_run", base + "runs:\n  - name: a\n", {"runs.b.serving.k=2"});
  CHECK(run_err.find("no run named 'b'") != std::string::npos);
}

TEST_CASE("the CLI exits with status 2 on bad input and leaves no results") {
  const auto dir = temp_dir("cli");
  const auto cfg = write_text(dir / "bad.yaml", "experiment: bad\ntrace: " + trace_path() +
                                                    "\nserving: {k: -1}\noutput: {dir: " +
                                                    (dir / "results").string() + "}\n");
  const std::string cmd = std::string(INFERSCALE_BINARY_DIR) + "/inferscale run " + cfg +
                          " --no-progress > " + (dir / "out.txt").string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
  CHECK(read_text(dir / "out.txt").find("bad.yaml:3:") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "results"));
}

namespace {

/// Loads `yaml` with `sets`; the first run's config (InputError propagates).
RunConfig run_of(const std::string& name, const std::string& yaml,
                 const std::vector<std::string>& sets) {
  const auto dir = temp_dir("config_" + name);
  const auto exp = load_experiment(write_text(dir / "c.yaml", yaml), sets);
  validate_experiment(exp);
  return exp.runs.front();
}

}  // namespace

TEST_CASE("a --set value is YAML and may change a key's kind") {
  const std::string base = "experiment: e\ntrace: " + trace_path() + "\n";
  SECTION("a scalar replaced by a map") {
    const auto r =
        run_of("set_scalar_to_map", base + "store:\n  gpu: {capacity: 10GB, eviction: lru}\n",
               {"store.gpu.eviction={name: lfu, aging_period: 5}"});
    CHECK(r.store.gpu.eviction == "lfu");
    REQUIRE(r.store.gpu.eviction_params.has("aging_period"));
    CHECK(r.store.gpu.eviction_params.values().at("aging_period").text == "5");
    CHECK(r.store.gpu.capacity_bytes == 10'000'000'000ull);  // the file's sibling keys stay
  }
  SECTION("a map replaced by a scalar") {
    const auto r =
        run_of("set_map_to_scalar",
               base + "store:\n  gpu: {capacity: 10GB, eviction: {name: lfu, aging_period: 5}}\n",
               {"store.gpu.eviction=fifo"});
    CHECK(r.store.gpu.eviction == "fifo");
    CHECK(r.store.gpu.eviction_params.values().empty());
  }
  SECTION("a scalar replaced by a map, at the top") {
    const auto r = run_of("set_trace_map", base, {"trace={path: " + trace_path() + "}"});
    CHECK(r.trace.kind == "file");
    CHECK(r.trace.path == trace_path());
  }
  SECTION("a sequence replaced by a sequence, and a scalar by a sequence") {
    // Parsed only: the remote executor is not linked into the simulator's library.
    const auto dir = temp_dir("config_set_seq_to_seq");
    const auto exp = load_experiment(
        write_text(dir / "c.yaml",
                   base + "executor:\n  kind: remote\n  endpoints: [127.0.0.1:7070]\n"),
        {"executor.endpoints=[127.0.0.1:1, 127.0.0.1:2]"});
    CHECK(exp.runs.front().executor.endpoints ==
          std::vector<std::string>{"127.0.0.1:1", "127.0.0.1:2"});
    const auto err =
        error_of("set_scalar_to_seq", base + "serving: {k: 5}\n", {"serving.k=[1, 2]"});
    INFO(err);
    CHECK(err.find("--set serving.k=[1, 2]: serving.k: expected a single value") !=
          std::string::npos);
  }
  SECTION("a map replaced by a map merges with it, the flag winning") {
    const auto r =
        run_of("set_map_to_map",
               base + "store:\n  gpu: {capacity: 10GB, eviction: {name: lfu, aging_period: 5}}\n",
               {"store.gpu.eviction={aging_period: 7}"});
    CHECK(r.store.gpu.eviction == "lfu");
    CHECK(r.store.gpu.eviction_params.values().at("aging_period").text == "7");
  }
  SECTION("the later of two flags on one key wins") {
    const auto r = run_of("set_twice", base, {"serving.k=3", "serving.k=4"});
    CHECK(r.serving.k == 4);
  }
}

TEST_CASE("an error in a --set value names the flag instead of a file line") {
  const std::string base = "experiment: e\ntrace: " + trace_path() +
                           "\nstore:\n  gpu: {capacity: 10GB, eviction: lru}\n";
  SECTION("a policy parameter") {
    const auto err =
        error_of("set_err_policy", base, {"store.gpu.eviction={name: lfu, aging_period: x}"});
    INFO(err);
    CHECK(err.find("--set store.gpu.eviction={name: lfu, aging_period: x}: ") != std::string::npos);
    CHECK(err.find("c.yaml") == std::string::npos);
  }
  SECTION("a map where the file has a scalar, with an unknown key") {
    const auto err = error_of("set_err_key", base, {"trace={kk: 1}"});
    INFO(err);
    CHECK(err.find("--set trace={kk: 1}: trace.kk: unknown key 'kk'") != std::string::npos);
  }
  SECTION("one run's override") {
    const auto err = error_of("set_err_run", base + "runs:\n  - name: a\n", {"runs.a.serving.k=x"});
    INFO(err);
    CHECK(err.find("--set runs.a.serving.k=x: serving.k: expected an integer") !=
          std::string::npos);
  }
  SECTION("a policy name") {
    const auto err = error_of("set_err_name", base, {"store.gpu.eviction=lruu"});
    INFO(err);
    CHECK(err.find("--set store.gpu.eviction=lruu") != std::string::npos);
    CHECK(err.find("c.yaml") == std::string::npos);
  }
}

TEST_CASE("a key missing from the file is blamed on the file, not on a --set of another key") {
  // Before: the first layer (a --set of serving.k) was taken as the place of the missing key.
  const auto err =
      error_of("missing_with_set", "experiment: e\nserving: {k: 3}\n", {"serving.k=20"});
  INFO(err);
  CHECK(err.find("c.yaml:1:1: <top>: missing key 'trace'") != std::string::npos);
  CHECK(err.find("--set") == std::string::npos);
  const std::string base = "experiment: e\ntrace: " + trace_path() + "\n";
  const auto gpu =
      error_of("missing_gpu_key_with_set", base + "gpu: {bf16_tflops: 1}\n", {"gpu.name=mine"});
  INFO(gpu);
  CHECK(gpu.find("c.yaml:3:6: gpu: gpu: missing key 'memory'") != std::string::npos);
}

TEST_CASE("a name the file system refuses is an input error naming the key and the path") {
  // 300 characters: longer than a file name may be (ENAMETOOLONG); std::filesystem::exists
  // threw, which the CLI reported as an internal error (status 1).
  const std::string long_name(300, 'x');
  const std::string trace = "/tmp/" + long_name + ".jsonl";
  const auto t = error_of("long_trace_name", "experiment: e\ntrace: " + trace + "\n");
  INFO(t);
  CHECK(t.find("c.yaml:2:8: trace: cannot access '" + trace + "'") != std::string::npos);
  CHECK(t.find("too long") != std::string::npos);
  const std::string base = "experiment: e\ntrace: " + trace_path() + "\n";
  const auto m = error_of("long_model_name", base + "model: " + long_name + "\n");
  INFO(m);
  CHECK(m.find("c.yaml:3:8: model: cannot access '") != std::string::npos);
  const auto g = error_of("long_gpu_name", base + "gpu: " + long_name + "\n");
  INFO(g);
  CHECK(g.find("c.yaml:3:6: gpu: cannot access '") != std::string::npos);
  std::string cfg_message;
  try {
    load_experiment("/tmp/" + long_name + ".yaml", {});
  } catch (const InputError& e) {
    cfg_message = e.what();
  }
  CHECK(cfg_message.find("cannot access '/tmp/" + long_name + ".yaml'") != std::string::npos);
}

TEST_CASE("a map or a list used as a key is an input error at the key") {
  // Found by fuzz_experiment: `? users: 100` made a map the key, and reading it as a name threw
  // yaml-cpp's BadConversion (an internal error).
  const auto err = error_of("complex_key", "experiment: e\ntrace:\n  locomo:\n  ? users: 100\n");
  INFO(err);
  CHECK(err.find("c.yaml:4:5: trace: expected a key name, got a map") != std::string::npos);
  const auto list = error_of("list_key", "experiment: e\n? [a, b]\n: 3\n");
  INFO(list);
  CHECK(list.find("c.yaml:2:3: <top>: expected a key name, got a list") != std::string::npos);
}
