// The model presets (configs/models/*.yaml), the one source of model shapes for the simulator and
// the GPU executor: each file against the published config.json values the executor used to
// hard-code, and the reader's errors.
#include <unistd.h>

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "executor/model_config.h"
#include "tests/catch.h"
#include "traces/error.h"

using namespace inferscale;

namespace {

struct Expected {
  const char* name;
  std::uint32_t layers, hidden, heads, kv_heads, head_dim, ffn, vocab;
  double rope_theta;
  double rope_scaling_factor;  // 0: none
  double rms_eps;
  std::uint32_t max_positions;
  bool tie_embeddings;
};

std::string error_of(const std::string& yaml) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("inferscale_model_config_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = (dir / "m.yaml").string();
  std::ofstream(path) << yaml;
  try {
    load_model_config(path, "test");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("each model preset has the shape of its published config.json") {
  // Qwen2.5-7B's max_positions is 32768 (its window without YaRN); the executor's former table
  // said 131072.
  const std::vector<Expected> presets = {
      {"llama-3.1-8b", 32, 4096, 32, 8, 128, 14336, 128256, 500000, 8, 1e-5, 131072, false},
      {"mistral-7b", 32, 4096, 32, 8, 128, 14336, 32768, 1000000, 0, 1e-5, 32768, false},
      {"qwen2.5-7b", 28, 3584, 28, 4, 128, 18944, 152064, 1000000, 0, 1e-6, 32768, false},
      {"smollm2-135m", 30, 576, 9, 3, 64, 1536, 49152, 100000, 0, 1e-5, 8192, true},
      {"llama-3.1-70b", 80, 8192, 64, 8, 128, 28672, 128256, 500000, 8, 1e-5, 131072, false},
      {"llama-3.1-405b", 126, 16384, 128, 8, 128, 53248, 128256, 500000, 8, 1e-5, 131072, false},
      {"qwen2.5-72b", 80, 8192, 64, 8, 128, 29568, 152064, 1000000, 0, 1e-5, 32768, false},
      {"qwen3-30b-a3b", 48, 2048, 32, 4, 128, 6144, 151936, 1000000, 0, 1e-6, 40960, false},
  };
  const auto names = preset_names("models");
  for (const auto& e : presets) {
    SECTION(e.name) {
      CHECK(std::find(names.begin(), names.end(), e.name) != names.end());
      const ModelConfig m = load_model_config(e.name, "test");
      CHECK(m.name == e.name);
      CHECK(m.layers == e.layers);
      CHECK(m.hidden == e.hidden);
      CHECK(m.heads == e.heads);
      CHECK(m.kv_heads == e.kv_heads);
      CHECK(m.head_dim == e.head_dim);
      CHECK(m.ffn == e.ffn);
      CHECK(m.vocab == e.vocab);
      CHECK(m.dtype_bytes == 2);
      CHECK(m.tie_embeddings == e.tie_embeddings);
      CHECK(m.rope_theta == e.rope_theta);
      CHECK(m.rope_layout == RopeLayout::kNeox);
      CHECK(m.rope_scaling_factor == e.rope_scaling_factor);
      if (e.rope_scaling_factor > 0) {
        CHECK(m.rope_low_freq_factor == 1.0);
        CHECK(m.rope_high_freq_factor == 4.0);
        CHECK(m.rope_original_max_positions == 8192);
      }
      CHECK(m.rms_eps == e.rms_eps);
      CHECK(m.max_positions == e.max_positions);
    }
  }
}

TEST_CASE("the mixture-of-experts preset and the dense ones' expert keys") {
  const ModelConfig moe = load_model_config("qwen3-30b-a3b", "test");
  CHECK(moe.moe());
  CHECK(moe.experts == 128);
  CHECK(moe.experts_active == 8);
  CHECK(moe.expert_ffn == 768);
  // Published totals: 30.5 B parameters, 3.3 B active; 70.6 B and 72.7 B for the dense 70Bs;
  // 405.9 B for Llama-3.1-405B (its model card rounds to 405 B).
  CHECK(std::abs(double(moe.parameters()) / 1e9 - 30.5) < 0.1);
  CHECK(std::abs(double(moe.active_parameters()) / 1e9 - 3.3) < 0.1);
  CHECK(std::abs(double(load_model_config("llama-3.1-70b", "t").parameters()) / 1e9 - 70.6) < 0.1);
  CHECK(std::abs(double(load_model_config("qwen2.5-72b", "t").parameters()) / 1e9 - 72.7) < 0.1);
  CHECK(std::abs(double(load_model_config("llama-3.1-405b", "t").parameters()) / 1e9 - 405.9) <
        0.1);
  for (const auto& name : {"llama-3.1-70b", "qwen2.5-72b", "llama-3.1-8b"}) {
    const ModelConfig m = load_model_config(name, "test");
    CHECK_FALSE(m.moe());
    CHECK(m.active_parameters() == m.parameters());
  }
}

TEST_CASE("model descriptions: errors name the file, the line and the key") {
  const std::string base = "layers: 2\nhidden: 8\nheads: 2\nffn: 16\nvocab: 32\n";
  CHECK(error_of(base).empty());
  CHECK(error_of(base + "rope_theta: hot\n").find("m.yaml:6:13: rope_theta: expected a number") !=
        std::string::npos);
  CHECK(error_of(base + "kv_heads: 3\n").find("m.yaml:6:11: kv_heads: heads must be a multiple") !=
        std::string::npos);
  CHECK(error_of(base + "colour: red\n").find("m.yaml:6:9: colour: unknown key 'colour'") !=
        std::string::npos);
  CHECK(error_of(base + "rope_scaling: {factor: 0}\n")
            .find("m.yaml:6:24: rope_scaling.factor: expected a number in [1, 1e+06]") !=
        std::string::npos);
  CHECK(error_of("layers: 2\n").find("missing key 'hidden'") != std::string::npos);
  const std::string moe = base + "experts: 8\nexperts_active: 2\nexpert_ffn: 16\n";
  CHECK(error_of(moe).empty());
  CHECK(error_of(base + "experts: 8\nexpert_ffn: 16\n").find("missing key 'experts_active'") !=
        std::string::npos);
  CHECK(error_of(base + "experts: 2\nexperts_active: 3\nexpert_ffn: 16\n")
            .find("m.yaml:7:17: experts_active: experts_active (3) must not exceed experts (2)") !=
        std::string::npos);
  CHECK(error_of(base + "experts: 0\nexperts_active: 1\nexpert_ffn: 16\n")
            .find("experts: expected an integer in [1, 65536]") != std::string::npos);
  try {
    load_model_config("llama-9", "--model");
    FAIL("an unknown preset was accepted");
  } catch (const InputError& e) {
    CHECK(e.where() == "--model");
    CHECK(std::string(e.what()).find("presets: llama-3.1-405b, llama-3.1-70b, llama-3.1-8b") !=
          std::string::npos);
  }
}

TEST_CASE("presets are found in ./configs, else in the source tree") {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("inferscale_config_dir_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "configs" / "models");
  std::ofstream(dir / "configs" / "models" / "local.yaml")
      << "layers: 1\nhidden: 4\nheads: 1\nffn: 4\nvocab: 8\n";
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir / "configs");  // a folder without configs/models
  const auto source_dir = config_dir();
  const auto source_path = preset_path("mistral-7b", "models");
  std::filesystem::current_path(dir);
  const auto local_dir = config_dir();
  const auto local_names = preset_names("models");
  std::filesystem::current_path(cwd);
  CHECK(source_dir == std::string(INFERSCALE_SOURCE_DIR) + "/configs");
  CHECK(source_path == std::string(INFERSCALE_SOURCE_DIR) + "/configs/models/mistral-7b.yaml");
  CHECK(preset_path("my/model.yaml", "models") == "my/model.yaml");
  CHECK(local_dir == "configs");
  CHECK(local_names == std::vector<std::string>{"local"});
}
