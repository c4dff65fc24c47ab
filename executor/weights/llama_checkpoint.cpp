#include "executor/weights/llama_checkpoint.h"

#include <algorithm>
#include <cstring>

#include "executor/weights/gguf.h"
#include "traces/error.h"

namespace inferscale {

namespace {

void permute_rows(float* data, std::uint32_t heads, std::uint32_t head_dim, std::uint64_t cols,
                  bool to_gguf) {
  const std::uint32_t half = head_dim / 2;
  std::vector<float> head(std::size_t(head_dim) * cols);
  for (std::uint32_t h = 0; h < heads; ++h) {
    float* base = data + std::size_t(h) * head_dim * cols;
    std::memcpy(head.data(), base, head.size() * sizeof(float));
    for (std::uint32_t t = 0; t < 2; ++t) {
      for (std::uint32_t i = 0; i < half; ++i) {
        const std::size_t hf = std::size_t(t) * half + i, gg = std::size_t(i) * 2 + t;
        const std::size_t dst = to_gguf ? gg : hf, src = to_gguf ? hf : gg;
        std::memcpy(base + dst * cols, head.data() + src * cols, cols * sizeof(float));
      }
    }
  }
}

}  // namespace

void llama_unpermute_rows(float* data, std::uint32_t heads, std::uint32_t head_dim,
                          std::uint64_t cols) {
  permute_rows(data, heads, head_dim, cols, false);
}

void llama_permute_rows(float* data, std::uint32_t heads, std::uint32_t head_dim,
                        std::uint64_t cols) {
  permute_rows(data, heads, head_dim, cols, true);
}

const char* llama_weight_name(LlamaWeight w) {
  switch (w) {
    case LlamaWeight::kEmbed:
      return "embed";
    case LlamaWeight::kFinalNorm:
      return "final_norm";
    case LlamaWeight::kLmHead:
      return "lm_head";
    case LlamaWeight::kAttnNorm:
      return "attn_norm";
    case LlamaWeight::kWq:
      return "wq";
    case LlamaWeight::kWk:
      return "wk";
    case LlamaWeight::kWv:
      return "wv";
    case LlamaWeight::kWo:
      return "wo";
    case LlamaWeight::kMlpNorm:
      return "mlp_norm";
    case LlamaWeight::kWgate:
      return "wgate";
    case LlamaWeight::kWup:
      return "wup";
    case LlamaWeight::kWdown:
      return "wdown";
  }
  return "?";
}

std::vector<std::int64_t> llama_weight_shape(const ModelConfig& m, LlamaWeight w) {
  const std::int64_t h = m.hidden, q = std::int64_t(m.heads) * m.head_dim,
                     kv = std::int64_t(m.kv_heads) * m.head_dim, f = m.ffn, v = m.vocab;
  switch (w) {
    case LlamaWeight::kEmbed:
    case LlamaWeight::kLmHead:
      return {v, h};
    case LlamaWeight::kFinalNorm:
    case LlamaWeight::kAttnNorm:
    case LlamaWeight::kMlpNorm:
      return {h};
    case LlamaWeight::kWq:
      return {q, h};
    case LlamaWeight::kWk:
    case LlamaWeight::kWv:
      return {kv, h};
    case LlamaWeight::kWo:
      return {h, q};
    case LlamaWeight::kWgate:
    case LlamaWeight::kWup:
      return {f, h};
    case LlamaWeight::kWdown:
      return {h, f};
  }
  return {};
}

namespace {

class GgufCheckpoint : public LlamaCheckpoint {
 public:
  GgufCheckpoint(const std::string& path, bool unpermute) : file_(path), unpermute_(unpermute) {
    const std::string arch = file_.get_string("general.architecture");
    if (arch != "llama") {
      throw InputError(path + ": general.architecture",
                       "'" + arch + "' (expected llama: a Llama-family decoder)");
    }
    const std::string p = arch + ".";
    ModelConfig& m = config_;
    m.name = file_.find("general.name") ? file_.get_string("general.name") : path;
    m.layers = std::uint32_t(file_.get_int(p + "block_count"));
    m.hidden = std::uint32_t(file_.get_int(p + "embedding_length"));
    m.ffn = std::uint32_t(file_.get_int(p + "feed_forward_length"));
    m.heads = std::uint32_t(file_.get_int(p + "attention.head_count"));
    m.kv_heads = std::uint32_t(file_.get_int(p + "attention.head_count_kv", m.heads));
    if (m.heads == 0 || m.kv_heads == 0 || m.heads % m.kv_heads != 0) {
      throw InputError(path + ": " + p + "attention.head_count_kv",
                       "expected a divisor of head_count");
    }
    m.head_dim = std::uint32_t(file_.get_int(p + "attention.key_length", m.hidden / m.heads));
    if (file_.get_int(p + "rope.dimension_count", m.head_dim) != std::int64_t(m.head_dim)) {
      throw InputError(path + ": " + p + "rope.dimension_count",
                       "partial rotary is not modelled (expected the head dim)");
    }
    m.rope_theta = file_.get_float(p + "rope.freq_base", 10000.0);
    m.rms_eps = file_.get_float(p + "attention.layer_norm_rms_epsilon", 1e-5);
    m.max_positions = std::uint32_t(file_.get_int(p + "context_length", 8192));
    if (file_.find(p + "rope.scaling.type") != nullptr &&
        file_.get_string(p + "rope.scaling.type") != "none") {
      throw InputError(path + ": " + p + "rope.scaling.type",
                       "'" + file_.get_string(p + "rope.scaling.type") +
                           "' (expected none: rope scaling from GGUF is not modelled)");
    }
    if (file_.find_tensor("rope_freqs.weight") != nullptr) {
      throw InputError(path + ": rope_freqs.weight",
                       "llama3 frequency factors from GGUF are not modelled; use safetensors");
    }
    const GgufTensor* embed = tensor("token_embd.weight");
    m.vocab = std::uint32_t(embed->dims.size() == 2 ? embed->dims[1] : 0);
    m.tie_embeddings = file_.find_tensor("output.weight") == nullptr;
    m.rope_layout = unpermute_ ? RopeLayout::kNeox : RopeLayout::kGptj;
    m.dtype_bytes = 2;
  }

  HostTensor read(LlamaWeight w, std::uint32_t layer) const override {
    const std::string name = gguf_name(w, layer);
    const GgufTensor* t = tensor(name);
    HostTensor out;
    out.shape = llama_weight_shape(config_, w);
    std::vector<std::uint64_t> expect(out.shape.rbegin(), out.shape.rend());  // ne order
    if (t->dims != expect) {
      throw InputError(
          file_.path() + ": tensor " + name,
          std::string("shape does not match the model's metadata (") + llama_weight_name(w) + ")");
    }
    out.data = file_.dequantize(*t);
    if (unpermute_ && w == LlamaWeight::kWq) {
      llama_unpermute_rows(out.data.data(), config_.heads, config_.head_dim, config_.hidden);
    } else if (unpermute_ && w == LlamaWeight::kWk) {
      llama_unpermute_rows(out.data.data(), config_.kv_heads, config_.head_dim, config_.hidden);
    }
    return out;
  }

  std::string describe() const override { return "gguf(" + file_.path() + ")"; }

 private:
  const GgufTensor* tensor(const std::string& name) const {
    const GgufTensor* t = file_.find_tensor(name);
    if (t == nullptr) throw InputError(file_.path() + ": tensor " + name, "missing");
    return t;
  }

  static std::string gguf_name(LlamaWeight w, std::uint32_t l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    switch (w) {
      case LlamaWeight::kEmbed:
        return "token_embd.weight";
      case LlamaWeight::kFinalNorm:
        return "output_norm.weight";
      case LlamaWeight::kLmHead:
        return "output.weight";
      case LlamaWeight::kAttnNorm:
        return b + "attn_norm.weight";
      case LlamaWeight::kWq:
        return b + "attn_q.weight";
      case LlamaWeight::kWk:
        return b + "attn_k.weight";
      case LlamaWeight::kWv:
        return b + "attn_v.weight";
      case LlamaWeight::kWo:
        return b + "attn_output.weight";
      case LlamaWeight::kMlpNorm:
        return b + "ffn_norm.weight";
      case LlamaWeight::kWgate:
        return b + "ffn_gate.weight";
      case LlamaWeight::kWup:
        return b + "ffn_up.weight";
      case LlamaWeight::kWdown:
        return b + "ffn_down.weight";
    }
    return "";
  }

  GgufFile file_;
  bool unpermute_;
};

}  // namespace

std::unique_ptr<LlamaCheckpoint> open_gguf_checkpoint(const std::string& path, bool unpermute_qk) {
  return std::make_unique<GgufCheckpoint>(path, unpermute_qk);
}

std::unique_ptr<LlamaCheckpoint> open_checkpoint(const std::string& path) {
  const bool gguf = path.size() >= 5 && path.compare(path.size() - 5, 5, ".gguf") == 0;
  return gguf ? open_gguf_checkpoint(path) : open_safetensors_checkpoint(path);
}

}  // namespace inferscale
