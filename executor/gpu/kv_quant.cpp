// Fact KV storage formats on tensors: the same operations, in the same order, as
// kv_quant_round_trip_reference, so that both give the same floats.
#include "executor/gpu/kv_quant.h"

namespace inferscale {

void kv_quant_round_trip(at::Tensor x, KvFormat f) {
  if (f == KvFormat::kNative || x.numel() == 0) return;
  at::Tensor y = x.to(at::kFloat);
  if (f == KvFormat::kBf16) {
    x.copy_(y.to(at::kBFloat16));
    return;
  }
  const bool fp8 = f == KvFormat::kFp8;
  const at::Tensor amax = std::get<0>(y.abs().max(-1, /*keepdim=*/true));
  const at::Tensor scale = at::where(amax > 0, amax / (fp8 ? 448.0f : 127.0f), at::ones_like(amax));
  y = y / scale;
  at::Tensor q;
  if (fp8) {
    // step = 2^(max(floor(log2 |y|), -6) - 3): three mantissa bits, subnormals below 2^-6.
    const at::Tensor a = y.abs();
    const at::Tensor exp2 = std::get<1>(at::frexp(a));  // a = m * 2^exp2, m in [0.5, 1)
    const at::Tensor e = at::clamp_min(exp2.to(at::kInt) - 1, -6);
    // 2^(e - 3) built from its bits (exact, unlike pow on some backends): biased exponent.
    const at::Tensor step = ((e - 3 + 127) * (1 << 23)).view(at::kFloat);
    q = at::clamp_max(at::round(a / step) * step, 448.0f) * at::sign(y);
  } else {
    q = at::clamp(at::round(y), -127.0f, 127.0f);
  }
  x.copy_(q * scale);
}

}  // namespace inferscale
