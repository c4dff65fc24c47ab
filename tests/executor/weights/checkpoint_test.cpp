// Checkpoints: llama.cpp's rotary row permutation, and a tiny model written as GGUF
// (permuted, as llama.cpp writes it) and as safetensors + config.json (HF layout) reading back
// as the same weights.
#include <filesystem>
#include <fstream>
#include <random>

#include "executor/weights/llama_checkpoint.h"
#include "tests/catch.h"
#include "tests/executor/weights/test_files.h"
#include "traces/error.h"

using namespace inferscale;

TEST_CASE("llama.cpp's Q/K permutation interleaves each head's rotary halves", "[weights]") {
  // One head of dim 4, one column: HF rows (t, i) = 0:(0,0) 1:(0,1) 2:(1,0) 3:(1,1) go to
  // GGUF rows (i, t): 0, 2, 1, 3.
  std::vector<float> rows = {0, 1, 2, 3};
  llama_permute_rows(rows.data(), 1, 4, 1);
  CHECK(rows == std::vector<float>{0, 2, 1, 3});
  // Two heads of dim 8, three columns: unpermute undoes permute exactly.
  std::vector<float> w(2 * 8 * 3);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = float(i);
  auto p = w;
  llama_permute_rows(p.data(), 2, 8, 3);
  CHECK(p != w);
  // Head 1, GGUF row 1 = HF row (t=1, i=0) = row 4 of the head: values 8*3 + 4*3 + c.
  CHECK(p[(8 + 1) * 3 + 2] == float((8 + 4) * 3 + 2));
  llama_unpermute_rows(p.data(), 2, 8, 3);
  CHECK(p == w);
}

namespace {

struct TinyModel {
  ModelConfig m;
  std::vector<std::pair<std::string, std::vector<float>>> hf;  // HF name -> values
};

}  // namespace

TEST_CASE("a tiny model as GGUF and as safetensors reads back as the same weights", "[weights]") {
  const std::string dir = test::temp_dir("ckpt");
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  const std::uint32_t L = 2, H = 16, heads = 4, kv = 2, D = 4, F = 24, V = 40;
  auto rand = [&](std::size_t n) {
    std::vector<float> v(n);
    for (auto& x : v) x = normal(rng);
    return v;
  };
  test::GgufWriter g;
  g.add_string("general.architecture", "llama");
  g.add_u32("llama.block_count", L);
  g.add_u32("llama.embedding_length", H);
  g.add_u32("llama.feed_forward_length", F);
  g.add_u32("llama.attention.head_count", heads);
  g.add_u32("llama.attention.head_count_kv", kv);
  g.add_f32("llama.rope.freq_base", 10000.0f);
  g.add_f32("llama.attention.layer_norm_rms_epsilon", 1e-6f);
  g.add_u32("llama.context_length", 256);
  std::vector<test::SafetensorsEntry> st;
  auto both = [&](const std::string& gguf, const std::string& hf, std::vector<std::int64_t> shape,
                  std::uint32_t permute_heads) {
    std::size_t n = 1;
    for (auto d : shape) n *= std::size_t(d);
    const auto values = rand(n);
    st.push_back({hf, shape, values});
    auto gv = values;
    if (permute_heads) llama_permute_rows(gv.data(), permute_heads, D, std::uint64_t(shape[1]));
    std::vector<std::uint64_t> dims(shape.rbegin(), shape.rend());
    g.add_f32_tensor(gguf, dims, gv);
  };
  both("token_embd.weight", "model.embed_tokens.weight", {V, H}, 0);
  both("output_norm.weight", "model.norm.weight", {H}, 0);
  both("output.weight", "lm_head.weight", {V, H}, 0);
  for (std::uint32_t l = 0; l < L; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".",
                      h = "model.layers." + std::to_string(l) + ".";
    both(b + "attn_norm.weight", h + "input_layernorm.weight", {H}, 0);
    both(b + "attn_q.weight", h + "self_attn.q_proj.weight", {heads * D, H}, heads);
    both(b + "attn_k.weight", h + "self_attn.k_proj.weight", {kv * D, H}, kv);
    both(b + "attn_v.weight", h + "self_attn.v_proj.weight", {kv * D, H}, 0);
    both(b + "attn_output.weight", h + "self_attn.o_proj.weight", {H, heads * D}, 0);
    both(b + "ffn_norm.weight", h + "post_attention_layernorm.weight", {H}, 0);
    both(b + "ffn_gate.weight", h + "mlp.gate_proj.weight", {F, H}, 0);
    both(b + "ffn_up.weight", h + "mlp.up_proj.weight", {F, H}, 0);
    both(b + "ffn_down.weight", h + "mlp.down_proj.weight", {H, F}, 0);
  }
  g.write(dir + "/tiny.gguf");
  std::filesystem::create_directories(dir + "/hf");
  test::write_safetensors(dir + "/hf/model.safetensors", st);
  std::ofstream(dir + "/hf/config.json")
      << R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 16,
             "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 24,
             "vocab_size": 40, "rope_theta": 10000.0, "rms_norm_eps": 1e-6,
             "max_position_embeddings": 256, "tie_word_embeddings": false})";

  const auto a = open_checkpoint(dir + "/tiny.gguf");
  const auto b = open_checkpoint(dir + "/hf");
  const auto raw = open_gguf_checkpoint(dir + "/tiny.gguf", /*unpermute_qk=*/false);
  CHECK(a->config().layers == L);
  CHECK(a->config().head_dim == D);
  CHECK(b->config().kv_heads == kv);
  CHECK(b->config().vocab == V);
  CHECK(a->config().rope_layout == RopeLayout::kNeox);
  CHECK(raw->config().rope_layout == RopeLayout::kGptj);
  CHECK_FALSE(a->config().tie_embeddings);
  const LlamaWeight per_layer[] = {LlamaWeight::kAttnNorm, LlamaWeight::kWq,  LlamaWeight::kWk,
                                   LlamaWeight::kWv,       LlamaWeight::kWo,  LlamaWeight::kMlpNorm,
                                   LlamaWeight::kWgate,    LlamaWeight::kWup, LlamaWeight::kWdown};
  for (LlamaWeight w : {LlamaWeight::kEmbed, LlamaWeight::kFinalNorm, LlamaWeight::kLmHead}) {
    CHECK(a->read(w).data == b->read(w).data);
  }
  for (std::uint32_t l = 0; l < L; ++l) {
    for (LlamaWeight w : per_layer) {
      INFO(llama_weight_name(w) << " layer " << l);
      const HostTensor x = a->read(w, l), y = b->read(w, l);
      CHECK(x.shape == y.shape);
      CHECK(x.data == y.data);
    }
  }
  CHECK(raw->read(LlamaWeight::kWq, 0).data != b->read(LlamaWeight::kWq, 0).data);
  CHECK(raw->read(LlamaWeight::kWv, 0).data == b->read(LlamaWeight::kWv, 0).data);
}

TEST_CASE("checkpoint errors name the file and what was expected", "[weights]") {
  const std::string dir = test::temp_dir("ckpt_err");
  test::GgufWriter g;
  g.add_string("general.architecture", "gpt2");
  g.write(dir + "/gpt2.gguf");
  CHECK_THROWS_WITH(open_checkpoint(dir + "/gpt2.gguf"),
                    Catch::Contains("general.architecture") && Catch::Contains("expected llama"));
  std::filesystem::create_directories(dir + "/hf");
  test::write_safetensors(dir + "/hf/model.safetensors", {{"x", {2}, {1, 2}}});
  CHECK_THROWS_WITH(open_checkpoint(dir + "/hf"), Catch::Contains("config.json"));
  std::ofstream(dir + "/hf/config.json") << R"({"model_type": "llama", "hidden_size": 0})";
  CHECK_THROWS_WITH(open_checkpoint(dir + "/hf"), Catch::Contains("expected a positive integer"));
  {
    std::ofstream f(dir + "/bad.safetensors", std::ios::binary);
    const char bytes[] = {16, 0, 0, 0, 0, 0, 0, 0};
    f.write(bytes, 8);
    f << "{not json}      ";
  }
  CHECK_THROWS_AS(open_checkpoint(dir + "/bad.safetensors"), InputError);
}
