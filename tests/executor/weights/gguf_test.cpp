// The GGUF reader on files written by the test (every metadata kind, each tensor type, broken
// files) and on the real SmolLM2 GGUF when it has been fetched.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "executor/weights/gguf.h"
#include "executor/weights/llama_checkpoint.h"
#include "tests/catch.h"
#include "tests/executor/weights/test_files.h"
#include "traces/error.h"

using namespace inferscale;

namespace {

std::string write_bytes(const std::string& path, const std::vector<std::uint8_t>& b) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
  return path;
}

}  // namespace

std::string smollm2_gguf_path() {
  if (const char* p = std::getenv("INFERSCALE_MODEL_GGUF")) return p;
  return std::string(INFERSCALE_SOURCE_DIR) + "/.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

TEST_CASE("GGUF metadata of every kind and tensors of each type read back", "[weights]") {
  const std::string dir = test::temp_dir("gguf_meta");
  test::GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_u32("llama.block_count", 7);
  w.add_f32("llama.rope.freq_base", 12345.5f);
  w.add_bool("tokenizer.ggml.add_bos_token", true);
  w.add_strings("tokenizer.ggml.tokens", {"a", "b", "ab", ""});
  w.add_i32s("tokenizer.ggml.token_type", {1, 1, 3, -4});
  w.add_f32_tensor("f32", {3, 2}, {1, 2, 3, 4, 5, 6});
  std::vector<std::uint8_t> q8 = {0x00, 0x3c};  // Q8_0 block with d = 1
  for (int i = 0; i < 32; ++i) q8.push_back(std::uint8_t(std::int8_t(i - 3)));
  w.add_tensor("q8", {32}, 8, q8);
  const std::string path = dir + "/t.gguf";
  w.write(path);

  GgufFile g(path);
  CHECK(g.version() == 3);
  CHECK(g.get_string("general.architecture") == "llama");
  CHECK(g.get_int("llama.block_count") == 7);
  CHECK(g.get_float("llama.rope.freq_base") == 12345.5);
  CHECK(g.get_float("llama.block_count") == 7.0);
  CHECK(g.get_bool("tokenizer.ggml.add_bos_token"));
  CHECK(g.get_strings("tokenizer.ggml.tokens") == std::vector<std::string>{"a", "b", "ab", ""});
  CHECK(g.get_ints("tokenizer.ggml.token_type") == std::vector<std::int64_t>{1, 1, 3, -4});
  CHECK(g.get_int("missing.key", 42) == 42);
  CHECK_THROWS_AS(g.get_int("general.architecture"), InputError);
  CHECK_THROWS_AS(g.get_string("missing.key"), InputError);
  REQUIRE(g.tensors().size() == 2);
  const GgufTensor* t = g.find_tensor("f32");
  REQUIRE(t != nullptr);
  CHECK(t->dims == std::vector<std::uint64_t>{3, 2});
  CHECK(t->offset % 32 == 0);
  CHECK(g.dequantize(*t) == std::vector<float>{1, 2, 3, 4, 5, 6});
  const auto q = g.dequantize(*g.find_tensor("q8"));
  for (int i = 0; i < 32; ++i) CHECK(q[std::size_t(i)] == float(i - 3));
}

TEST_CASE("broken GGUF files are refused with the byte where reading stopped", "[weights]") {
  const std::string dir = test::temp_dir("gguf_broken");
  test::GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_f32_tensor("x", {4}, {1, 2, 3, 4});
  const auto good = w.bytes();

  auto bad = good;
  bad[0] = 'X';
  CHECK_THROWS_WITH(GgufFile(write_bytes(dir + "/magic.gguf", bad)),
                    Catch::Contains("byte 4") && Catch::Contains("not a GGUF file"));
  bad = good;
  bad[4] = 9;  // version
  CHECK_THROWS_WITH(GgufFile(write_bytes(dir + "/version.gguf", bad)),
                    Catch::Contains("expected 2 or 3"));
  bad.assign(good.begin(), good.begin() + 40);  // cut inside the metadata
  CHECK_THROWS_WITH(GgufFile(write_bytes(dir + "/cut.gguf", bad)), Catch::Contains("truncated"));
  bad.assign(good.begin(), good.end() - 4);  // tensor data cut short
  CHECK_THROWS_WITH(GgufFile(write_bytes(dir + "/short.gguf", bad)),
                    Catch::Contains("tensor x") && Catch::Contains("past the end"));
  test::GgufWriter w2;
  w2.add_tensor("q6", {256}, 14, std::vector<std::uint8_t>(210, 0));  // Q6_K: read, not decoded
  GgufFile g(write_bytes(dir + "/q6.gguf", w2.bytes()));
  CHECK_THROWS_WITH(g.dequantize(g.tensors()[0]), Catch::Contains("Q6_K"));
}

TEST_CASE("the real SmolLM2-135M GGUF: metadata and shapes match the published config",
          "[weights][model]") {
  const std::string path = smollm2_gguf_path();
  if (!std::filesystem::exists(path)) {
    INFERSCALE_SKIP("model not fetched: run scripts/fetch-model.sh (" << path << ")");
  }
  const auto ckpt = open_gguf_checkpoint(path);
  const ModelConfig& m = ckpt->config();
  // The published HuggingFaceTB/SmolLM2-135M-Instruct config.json.
  CHECK(m.layers == 30);
  CHECK(m.hidden == 576);
  CHECK(m.heads == 9);
  CHECK(m.kv_heads == 3);
  CHECK(m.head_dim == 64);
  CHECK(m.ffn == 1536);
  CHECK(m.vocab == 49152);
  CHECK(m.tie_embeddings);
  CHECK(m.rope_theta == 100000.0);
  CHECK(m.rms_eps == Approx(1e-5));
  CHECK(m.rope_layout == RopeLayout::kNeox);
  GgufFile g(path);
  CHECK(g.find_tensor("token_embd.weight")->type == 8);    // Q8_0
  CHECK(g.find_tensor("blk.0.attn_q.weight")->type == 3);  // Q4_1
  // Norm weights are F32 and carry the model's scale: not all ones, all finite.
  const HostTensor norm = ckpt->read(LlamaWeight::kFinalNorm);
  REQUIRE(norm.data.size() == m.hidden);
  bool all_one = true;
  for (float v : norm.data) {
    REQUIRE(std::isfinite(v));
    all_one = all_one && v == 1.0f;
  }
  CHECK_FALSE(all_one);
  const HostTensor wq = ckpt->read(LlamaWeight::kWq, 29);
  CHECK(wq.shape == std::vector<std::int64_t>{576, 576});
}
