// The executor on the real SmolLM2 GGUF (CPU, fp32) against an independent NumPy reference
// (scripts/reference/smollm2_numpy.py --golden): token ids and logits of fixed prompts; and
// llama.cpp's permuted layout with interleaved rotary giving the same logits as the unpermuted
// layout with rotate-half rotary.
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "executor/gpu/checkpoint_loader.h"
#include "executor/gpu/gpu_executor.h"
#include "executor/tokenizer/bpe_tokenizer.h"
#include "executor/weights/gguf.h"
#include "tests/catch.h"
#include "tests/eval/model_paths.h"

using namespace inferscale;

namespace {

std::unique_ptr<GpuExecutor> cpu_executor(std::shared_ptr<const LlamaCheckpoint> ckpt) {
  return std::make_unique<GpuExecutor>(checkpoint_cpu_options(std::move(ckpt), 1024));
}

}  // namespace

TEST_CASE("SmolLM2 logits match the NumPy reference within 1e-3 of the largest logit",
          "[eval][model]") {
  const std::string path = test::smollm2_gguf();
  if (!std::filesystem::exists(path)) {
    INFERSCALE_SKIP("model not fetched: run scripts/fetch-model.sh (" << path << ")");
  }
  c10::InferenceMode guard;
  std::ifstream in(std::string(INFERSCALE_SOURCE_DIR) + "/tests/eval/data/smollm2_reference.json");
  REQUIRE(in.good());
  const auto cases = nlohmann::json::parse(in);
  const BpeTokenizer tok = BpeTokenizer::from_gguf(GgufFile(path));
  auto ex = cpu_executor(std::shared_ptr<const LlamaCheckpoint>(open_checkpoint(path)));
  REQUIRE(cases.size() >= 3);
  for (const auto& c : cases) {
    const std::string text = c["text"];
    INFO("prompt: " << text);
    const auto ids = tok.encode(text);
    REQUIRE(ids == c["token_ids"].get<std::vector<std::int32_t>>());
    const at::Tensor logits = ex->prefill_logits(ids);
    const double scale = c["max_abs_logit"].get<double>();
    double worst = 0, best_ref = -1e30;
    std::int64_t best_id = -1;
    for (auto it = c["logits"].begin(); it != c["logits"].end(); ++it) {
      const std::int64_t id = std::stoll(it.key());
      const double want = it->get<double>();
      worst = std::max(worst, std::abs(logits[id].item<double>() - want));
      if (want > best_ref) best_ref = want, best_id = id;
    }
    INFO("max |diff| " << worst << " of largest logit " << scale);
    CHECK(worst <= 1e-3 * scale);
    CHECK(logits.argmax().item<std::int64_t>() == best_id);
  }
}

TEST_CASE("GGUF rows kept permuted with interleaved rotary give the same logits", "[eval][model]") {
  const std::string path = test::smollm2_gguf();
  if (!std::filesystem::exists(path)) {
    INFERSCALE_SKIP("model not fetched: run scripts/fetch-model.sh (" << path << ")");
  }
  c10::InferenceMode guard;
  const BpeTokenizer tok = BpeTokenizer::from_gguf(GgufFile(path));
  const auto ids = tok.encode("<|im_start|>user\nWhere did Caroline move from 4 years ago?");
  auto neox = cpu_executor(std::shared_ptr<const LlamaCheckpoint>(open_gguf_checkpoint(path)));
  auto gptj =
      cpu_executor(std::shared_ptr<const LlamaCheckpoint>(open_gguf_checkpoint(path, false)));
  CHECK(neox->model().rope_style() != gptj->model().rope_style());
  const at::Tensor a = neox->prefill_logits(ids), b = gptj->prefill_logits(ids);
  const double diff = (a - b).abs().max().item<double>(), scale = b.abs().max().item<double>();
  INFO("max |diff| " << diff << " of " << scale);
  CHECK(diff <= 1e-4 * scale);
  CHECK(a.argmax().item<std::int64_t>() == b.argmax().item<std::int64_t>());
}
