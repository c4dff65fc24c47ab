#include "executor/remote/protocol.h"

#include <cstdio>
#include <cstring>

#include "executor/remote/wire.h"

namespace inferscale::remote {

namespace {

using wire::Reader;
using wire::Writer;

void put_model(Writer& w, const ModelConfig& m) {
  w.str(m.name);
  for (std::uint32_t v :
       {m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim, m.ffn, m.vocab, m.dtype_bytes}) {
    w.u32(v);
  }
  w.flag(m.tie_embeddings);
  w.f64(m.rope_theta);
  w.u8(m.rope_layout == RopeLayout::kGptj ? 1 : 0);
  w.f64(m.rope_scaling_factor);
  w.f64(m.rope_low_freq_factor);
  w.f64(m.rope_high_freq_factor);
  w.u32(m.rope_original_max_positions);
  w.f64(m.rms_eps);
  w.u32(m.max_positions);
}

ModelConfig get_model(Reader& r) {
  ModelConfig m;
  m.name = r.str("model.name");
  m.layers = r.u32("model.layers");
  m.hidden = r.u32("model.hidden");
  m.heads = r.u32("model.heads");
  m.kv_heads = r.u32("model.kv_heads");
  m.head_dim = r.u32("model.head_dim");
  m.ffn = r.u32("model.ffn");
  m.vocab = r.u32("model.vocab");
  m.dtype_bytes = r.u32("model.dtype_bytes");
  m.tie_embeddings = r.flag("model.tie_embeddings");
  m.rope_theta = r.f64("model.rope_theta");
  const std::uint8_t layout = r.u8("model.rope_layout");
  if (layout > 1) r.fail("model.rope_layout", "value " + std::to_string(layout), 1);
  m.rope_layout = layout == 1 ? RopeLayout::kGptj : RopeLayout::kNeox;
  m.rope_scaling_factor = r.f64("model.rope_scaling_factor");
  m.rope_low_freq_factor = r.f64("model.rope_low_freq_factor");
  m.rope_high_freq_factor = r.f64("model.rope_high_freq_factor");
  m.rope_original_max_positions = r.u32("model.rope_original_max_positions");
  m.rms_eps = r.f64("model.rms_eps");
  m.max_positions = r.u32("model.max_positions");
  return m;
}

void put_gpu(Writer& w, const GpuConfig& g) {
  w.str(g.name);
  w.u64(g.memory_bytes);
  for (double v : {g.bf16_tflops, g.hbm_gbps, g.pcie_gbps, g.step_overhead_us,
                   g.per_seq_overhead_us, g.mfu, g.mbu, g.pcie_efficiency}) {
    w.f64(v);
  }
}

GpuConfig get_gpu(Reader& r) {
  GpuConfig g;
  g.name = r.str("gpu.name");
  g.memory_bytes = r.u64("gpu.memory_bytes");
  g.bf16_tflops = r.f64("gpu.bf16_tflops");
  g.hbm_gbps = r.f64("gpu.hbm_gbps");
  g.pcie_gbps = r.f64("gpu.pcie_gbps");
  g.step_overhead_us = r.f64("gpu.step_overhead_us");
  g.per_seq_overhead_us = r.f64("gpu.per_seq_overhead_us");
  g.mfu = r.f64("gpu.mfu");
  g.mbu = r.f64("gpu.mbu");
  g.pcie_efficiency = r.f64("gpu.pcie_efficiency");
  return g;
}

}  // namespace

const char* to_string(MessageType t) {
  switch (t) {
    case MessageType::kHello:
      return "hello";
    case MessageType::kWelcome:
      return "welcome";
    case MessageType::kExecute:
      return "execute";
    case MessageType::kResult:
      return "result";
    case MessageType::kError:
      return "error";
  }
  return "unknown";
}

const char* to_string(ErrorCode c) {
  switch (c) {
    case ErrorCode::kBadFrame:
      return "bad frame";
    case ErrorCode::kBadMessage:
      return "bad message";
    case ErrorCode::kMismatch:
      return "mismatch";
    case ErrorCode::kExecutorFailed:
      return "executor failed";
    case ErrorCode::kBusy:
      return "busy";
    case ErrorCode::kTimeout:
      return "timeout";
  }
  return "unknown error";
}

FrameHeader decode_header(const std::uint8_t* in) {
  Reader r(std::span<const std::uint8_t>(in, kHeaderBytes), "frame header");
  FrameHeader h;
  h.magic = r.u32("magic");
  h.version = r.uint<std::uint16_t>("version");
  h.type = r.uint<std::uint16_t>("type");
  h.sequence = r.u32("sequence");
  h.payload_bytes = r.u32("payload_bytes");
  return h;
}

void check_header(const FrameHeader& h, std::uint32_t max_payload_bytes) {
  char buf[160];
  if (h.magic != kMagic) {
    std::snprintf(buf, sizeof(buf),
                  "bad magic 0x%08x (expected 0x%08x, \"ISEX\"): not an InferScale executor frame",
                  h.magic, kMagic);
    throw ProtocolError(buf);
  }
  if (h.version != kProtocolVersion) {
    throw ProtocolError("protocol version " + std::to_string(h.version) +
                        " not supported (this side speaks version " +
                        std::to_string(kProtocolVersion) + ")");
  }
  if (h.type < static_cast<std::uint16_t>(MessageType::kHello) ||
      h.type > static_cast<std::uint16_t>(MessageType::kError)) {
    throw ProtocolError("unknown message type " + std::to_string(h.type));
  }
  if (h.payload_bytes > max_payload_bytes) {
    throw ProtocolError("frame of " + std::to_string(h.payload_bytes) +
                        " payload bytes exceeds the limit of " + std::to_string(max_payload_bytes));
  }
}

void start_frame(std::vector<std::uint8_t>& frame) {
  frame.assign(kHeaderBytes, 0);
}

void seal_frame(std::vector<std::uint8_t>& frame, MessageType type, std::uint32_t sequence) {
  const std::size_t payload = frame.size() - kHeaderBytes;
  if (payload > kMaxFrameBytes) {
    throw ProtocolError(std::string(to_string(type)) + " message of " + std::to_string(payload) +
                        " bytes exceeds the frame limit of " + std::to_string(kMaxFrameBytes));
  }
  std::vector<std::uint8_t> header;
  header.reserve(kHeaderBytes);
  Writer w(header);
  w.u32(kMagic);
  w.u16(kProtocolVersion);
  w.u16(static_cast<std::uint16_t>(type));
  w.u32(sequence);
  w.u32(static_cast<std::uint32_t>(payload));
  std::memcpy(frame.data(), header.data(), kHeaderBytes);
}

void encode_hello(const Hello& m, std::vector<std::uint8_t>& out) {
  Writer w(out);
  w.str(m.client);
  put_model(w, m.identity.model);
  put_gpu(w, m.identity.gpu);
  w.u64(m.identity.pool_capacity_bytes);
}

Hello decode_hello(std::span<const std::uint8_t> payload) {
  Reader r(payload, "hello");
  Hello m;
  m.client = r.str("client");
  m.identity.model = get_model(r);
  m.identity.gpu = get_gpu(r);
  m.identity.pool_capacity_bytes = r.u64("pool_capacity_bytes");
  r.finish();
  return m;
}

void encode_welcome(const Welcome& m, std::vector<std::uint8_t>& out) {
  Writer w(out);
  w.str(m.executor);
  w.str(m.server);
}

Welcome decode_welcome(std::span<const std::uint8_t> payload) {
  Reader r(payload, "welcome");
  Welcome m;
  m.executor = r.str("executor");
  m.server = r.str("server");
  r.finish();
  return m;
}

void encode_error(const ErrorMessage& m, std::vector<std::uint8_t>& out) {
  Writer w(out);
  w.u32(static_cast<std::uint32_t>(m.code));
  w.str(m.message);
}

ErrorMessage decode_error(std::span<const std::uint8_t> payload) {
  Reader r(payload, "error");
  ErrorMessage m;
  m.code = static_cast<ErrorCode>(r.u32("code"));  // unknown codes print as "unknown error"
  m.message = r.str("message");
  r.finish();
  return m;
}

}  // namespace inferscale::remote
