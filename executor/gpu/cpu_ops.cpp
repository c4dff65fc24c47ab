// CPU implementation of DeviceOps: the kernels' CPU references (the definitions of what the
// kernels compute) and plain batched attention with masks. For tests and small models.
#include <chrono>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "executor/gpu/device_ops.h"
#include "kernels/reference/argmax.h"
#include "kernels/reference/inject.h"
#include "kernels/reference/kv_append.h"
#include "kernels/reference/rms_norm.h"
#include "kernels/reference/silu_mul.h"
#include "kernels/reference/split_kv_attention.h"

namespace inferscale {

DType kernel_dtype(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return DType::kF32;
    case at::kBFloat16:
      return DType::kBF16;
    case at::kHalf:
      return DType::kF16;
    default:
      throw std::invalid_argument("kernel_dtype: unsupported tensor dtype");
  }
}

void DeviceOps::copy(const CopyRegion& r) {
  auto* dst = static_cast<char*>(r.dst);
  const auto* src = static_cast<const char*>(r.src);
  for (std::size_t i = 0; i < r.rows; ++i)
    std::memcpy(dst + i * r.pitch, src + i * r.pitch, r.row_bytes);
}

at::Tensor DeviceOps::argmax_rows(const at::Tensor& logits) {
  const at::Tensor x = logits.dim() == 2 && logits.stride(1) == 1 ? logits : logits.contiguous();
  at::Tensor out = at::empty({x.size(0)}, x.options().dtype(at::kInt));
  ArgmaxParams p;
  p.in = x.data_ptr();
  p.out = out.data_ptr<std::int32_t>();
  p.rows = x.size(0);
  p.cols = x.size(1);
  p.stride = x.stride(0);
  p.dtype = kernel_dtype(x.scalar_type());
  argmax(p);
  return out;
}

bool split_kv_wanted(const SplitKvPolicy& policy, const AttentionBatch& b) {
  return policy.enabled && b.segments > 0 && b.max_q <= policy.max_query_tokens &&
         b.max_k >= policy.min_context_tokens;
}

SplitKvAttentionParams split_kv_params(const at::Tensor& q, const at::Tensor& k,
                                       const at::Tensor& v, const at::Tensor& out,
                                       const AttentionBatch& b, double scale) {
  if (k.strides() != v.strides() || q.stride(2) != 1 || k.stride(2) != 1 || out.stride(2) != 1) {
    throw std::invalid_argument("split_kv_params: k and v must share strides, head_dim contiguous");
  }
  SplitKvAttentionParams p;
  p.q = q.data_ptr();
  p.k = k.data_ptr();
  p.v = v.data_ptr();
  p.out = out.data_ptr();
  p.q_token_stride = q.stride(0);
  p.q_head_stride = q.stride(1);
  p.kv_row_stride = k.stride(0);
  p.kv_head_stride = k.stride(1);
  p.out_token_stride = out.stride(0);
  p.out_head_stride = out.stride(1);
  p.segments = b.segments;
  p.tokens = std::int32_t(q.size(0));
  p.heads = std::int32_t(q.size(1));
  p.kv_heads = std::int32_t(k.size(1));
  p.head_dim = std::int32_t(q.size(2));
  p.max_q = b.max_q;
  p.max_k = b.max_k;
  p.scale = float(scale);
  p.dtype = kernel_dtype(q.scalar_type());
  return p;
}

at::Tensor math_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const AttentionBatch& b, double scale) {
  // Pad every segment to [max_q, max_k], mask, and compute all segments at once.
  const std::int64_t S = b.segments, mq = b.max_q, mk = b.max_k;
  const std::int64_t H = q.size(1), D = q.size(2), KV = k.size(1);
  std::vector<std::int64_t> qrow(S * mq, 0), krow(S * mk, 0);
  std::vector<std::uint8_t> allowed(S * mq * mk, 0);
  std::vector<std::int64_t> valid_rows;
  for (std::int64_t s = 0; s < S; ++s) {
    const std::int64_t q0 = b.host_cu_q[s], n = b.host_cu_q[s + 1] - q0;
    const std::int64_t k0 = b.host_k_start[s], used = b.host_k_used[s];
    for (std::int64_t i = 0; i < n; ++i) {
      qrow[s * mq + i] = q0 + i;
      valid_rows.push_back(s * mq + i);
      for (std::int64_t j = 0; j <= used - n + i; ++j) allowed[(s * mq + i) * mk + j] = 1;
    }
    for (std::int64_t j = 0; j < used; ++j) krow[s * mk + j] = k0 + j;
  }
  const auto long_opts = at::TensorOptions().dtype(at::kLong);
  const at::Tensor qi = at::from_blob(qrow.data(), {S * mq}, long_opts).to(q.device());
  const at::Tensor ki = at::from_blob(krow.data(), {S * mk}, long_opts).to(q.device());
  const at::Tensor mask =
      at::from_blob(allowed.data(), {S, 1, mq, mk}, at::TensorOptions().dtype(at::kByte))
          .to(q.device())
          .to(at::kBool);
  const at::Tensor qp = q.index_select(0, qi).view({S, mq, H, D}).transpose(1, 2).to(at::kFloat);
  auto expand = [&](const at::Tensor& x) {  // [S*mk, KV, D] -> [S, H, mk, D], GQA groups
    return x.index_select(0, ki)
        .view({S, mk, KV, 1, D})
        .expand({S, mk, KV, H / KV, D})
        .reshape({S, mk, H, D})
        .transpose(1, 2)
        .to(at::kFloat);
  };
  const at::Tensor kp = expand(k), vp = expand(v);
  at::Tensor scores = at::matmul(qp, kp.transpose(2, 3)).mul_(scale);
  scores.masked_fill_(mask.logical_not(), -std::numeric_limits<float>::infinity());
  // Padded query rows have no allowed key: give them a harmless row before the softmax.
  scores = at::where(mask.any(-1, true), scores, at::zeros_like(scores));
  const at::Tensor out = at::matmul(at::softmax(scores, -1), vp);  // [S, H, mq, D]
  const at::Tensor rows =
      at::from_blob(valid_rows.data(), {std::int64_t(valid_rows.size())}, long_opts).to(q.device());
  return out.transpose(1, 2).reshape({S * mq, H, D}).index_select(0, rows).to(q.scalar_type());
}

namespace {

class WallClock : public StepClock {
 public:
  void reset() override { marks_.clear(); }
  int mark() override {
    marks_.push_back(std::chrono::steady_clock::now());
    return int(marks_.size()) - 1;
  }
  void synchronize() override {}
  std::int64_t elapsed_ns(int from, int to) override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(marks_.at(to) - marks_.at(from))
        .count();
  }

 private:
  std::vector<std::chrono::steady_clock::time_point> marks_;
};

class CpuOps : public DeviceOps {
 public:
  void kv_append(const KvAppendParams& p) override { kv_append_reference(p); }
  void kv_inject(const InjectParams& p) override { kv_inject_reference(p); }
  void rms_norm(const RmsNormParams& p) override { rms_norm_reference(p); }
  void silu_mul(const SiluMulParams& p) override { silu_mul_reference(p); }
  void argmax(const ArgmaxParams& p) override { argmax_reference(p); }

  at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                       const AttentionBatch& b, double scale) override {
    if (!split_kv_wanted(split_kv_, b)) {
      ++counts_.math;
      return math_attention(q, k, v, b, scale);
    }
    // The split-KV reference: what the kernel computes on CUDA, without the splitting.
    ++counts_.split_kv;
    at::Tensor out = at::empty_like(q);
    SplitKvAttentionParams p = split_kv_params(q, k, v, out, b, scale);
    p.cu_q = b.host_cu_q.data();
    p.k_start = b.host_k_start.data();
    p.k_used = b.host_k_used.data();
    split_kv_attention_reference(p);
    return out;
  }

  at::Tensor upload(const std::vector<std::int32_t>& host) override {
    return at::from_blob(const_cast<std::int32_t*>(host.data()), {std::int64_t(host.size())},
                         at::TensorOptions().dtype(at::kInt))
        .clone();
  }
  at::Tensor to_host(const at::Tensor& t) override { return t.clone(); }
  StepClock& clock() override { return clock_; }
  at::Device device() const override { return at::Device(at::kCPU); }
  std::string device_name() const override { return "cpu"; }

 private:
  WallClock clock_;
};

}  // namespace

std::unique_ptr<DeviceOps> make_cpu_ops() {
  return std::make_unique<CpuOps>();
}

}  // namespace inferscale
