#include "executor/remote/protocol.h"

#include <cstdio>
#include <cstring>

namespace inferscale::remote {

// Every field of these structs crosses the wire. A new field changes the size and stops the
// build here: encode it below (and bump kProtocolVersion), then update the size.
static_assert(sizeof(PromptFact) == 24, "PromptFact changed: update encode_plan/decode_plan");
static_assert(sizeof(PrefillItem) == 64, "PrefillItem changed: update encode_plan/decode_plan");
static_assert(sizeof(DecodeItem) == 16, "DecodeItem changed: update encode_plan/decode_plan");
static_assert(sizeof(FactEncode) == 48, "FactEncode changed: update encode_plan/decode_plan");
static_assert(sizeof(FactLoad) == 40, "FactLoad changed: update encode_plan/decode_plan");
static_assert(sizeof(BatchPlan) == 16 + 9 * sizeof(std::vector<int>),
              "BatchPlan changed: update encode_plan/decode_plan");
static_assert(sizeof(PhaseTimes) == 6 * sizeof(SimTime),
              "PhaseTimes changed: update encode_result/decode_result");
static_assert(sizeof(BatchResult) == 7 * sizeof(SimTime) + sizeof(std::vector<int>),
              "BatchResult changed: update encode_result/decode_result");

namespace {

// Bytes of each item on the wire (the decoder checks counts against these before allocating).
constexpr std::size_t kEncodeBytes = 8 + 8 + 4 + 4 + 1 + 8 + 4;
constexpr std::size_t kLoadBytes = 8 + 4 + 8 + 8 + 4;
constexpr std::size_t kPromptFactBytes = 8 + 4 + 4 + 1 + 1;
constexpr std::size_t kPrefillBytes = 8 + 8 + 10 * 4 + 3;
constexpr std::size_t kDecodeBytes = 8 + 4;
constexpr std::size_t kIdBytes = 8;
constexpr std::uint32_t kMaxStringBytes = 1u << 16;

class Writer {
 public:
  explicit Writer(std::vector<std::uint8_t>& out) : out_(out) {}
  template <class T>
  void uint(T v) {
    for (std::size_t i = 0; i < sizeof(T); ++i) {
      out_.push_back(static_cast<std::uint8_t>(static_cast<std::uint64_t>(v) >> (8 * i)));
    }
  }
  void u8(std::uint8_t v) { out_.push_back(v); }
  void u16(std::uint16_t v) { uint(v); }
  void u32(std::uint32_t v) { uint(v); }
  void u64(std::uint64_t v) { uint(v); }
  void i32(std::int32_t v) { uint(static_cast<std::uint32_t>(v)); }
  void i64(std::int64_t v) { uint(static_cast<std::uint64_t>(v)); }
  void flag(bool v) { u8(v ? 1 : 0); }
  void f64(double v) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    u64(bits);
  }
  void str(const std::string& s) {
    // Our strings are names and messages; cut rather than fail on an absurd one.
    const std::size_t n = std::min<std::size_t>(s.size(), kMaxStringBytes);
    u32(static_cast<std::uint32_t>(n));
    out_.insert(out_.end(), s.begin(), s.begin() + static_cast<std::ptrdiff_t>(n));
  }
  void count(std::size_t n) { u32(static_cast<std::uint32_t>(n)); }

 private:
  std::vector<std::uint8_t>& out_;
};

class Reader {
 public:
  Reader(std::span<const std::uint8_t> in, const char* message) : in_(in), message_(message) {}

  template <class T>
  T uint(const char* field) {
    need(sizeof(T), field);
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) v |= std::uint64_t(in_[pos_ + i]) << (8 * i);
    pos_ += sizeof(T);
    return static_cast<T>(v);
  }
  std::uint8_t u8(const char* field) { return uint<std::uint8_t>(field); }
  std::uint32_t u32(const char* field) { return uint<std::uint32_t>(field); }
  std::uint64_t u64(const char* field) { return uint<std::uint64_t>(field); }
  std::int32_t i32(const char* field) { return static_cast<std::int32_t>(u32(field)); }
  std::int64_t i64(const char* field) { return static_cast<std::int64_t>(u64(field)); }
  bool flag(const char* field) {
    const std::uint8_t b = u8(field);
    if (b > 1) fail(field, "boolean byte " + std::to_string(b) + " (expected 0 or 1)", 1);
    return b == 1;
  }
  double f64(const char* field) {
    const std::uint64_t bits = u64(field);
    double v;
    std::memcpy(&v, &bits, sizeof(v));
    return v;
  }
  std::string str(const char* field) {
    const std::uint32_t n = u32(field);
    if (n > kMaxStringBytes) {
      fail(field,
           "string of " + std::to_string(n) + " bytes (limit " + std::to_string(kMaxStringBytes) +
               ")",
           4);
    }
    need(n, field);
    std::string s(reinterpret_cast<const char*>(in_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  /// An item count, checked against the bytes left before anything is allocated for it.
  std::size_t count(const char* field, std::size_t item_bytes) {
    const std::uint32_t n = u32(field);
    if (std::uint64_t(n) * item_bytes > left()) {
      fail(field,
           std::to_string(n) + " items of " + std::to_string(item_bytes) + " bytes but only " +
               std::to_string(left()) + " bytes left",
           4);
    }
    return n;
  }
  void finish() {
    if (left() != 0) {
      throw ProtocolError(std::string(message_) + ": " + std::to_string(left()) +
                          " unexpected bytes after the message (at offset " + std::to_string(pos_) +
                          ")");
    }
  }
  [[noreturn]] void fail(const char* field, const std::string& what, std::size_t back = 0) const {
    throw ProtocolError(std::string(message_) + ": " + field + " at offset " +
                        std::to_string(pos_ - back) + ": " + what);
  }

 private:
  std::size_t left() const { return in_.size() - pos_; }
  void need(std::size_t n, const char* field) const {
    if (left() < n) {
      fail(field, "truncated (needs " + std::to_string(n) + " bytes, " + std::to_string(left()) +
                      " left)");
    }
  }

  std::span<const std::uint8_t> in_;
  std::size_t pos_ = 0;
  const char* message_;
};

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

void put_load(Writer& w, const FactLoad& l) {
  w.u64(l.fact);
  w.u32(l.tokens);
  w.u64(l.bytes);
  w.u64(l.for_request);
  w.u32(l.position);
}

FactLoad get_load(Reader& r) {
  FactLoad l;
  l.fact = r.u64("load.fact");
  l.tokens = r.u32("load.tokens");
  l.bytes = r.u64("load.bytes");
  l.for_request = r.u64("load.for_request");
  l.position = r.u32("load.position");
  return l;
}

void put_ids(Writer& w, const std::vector<std::uint64_t>& ids) {
  w.count(ids.size());
  for (auto id : ids) w.u64(id);
}

void get_ids(Reader& r, const char* field, std::vector<std::uint64_t>& ids) {
  const std::size_t n = r.count(field, kIdBytes);
  ids.resize(n);
  for (auto& id : ids) id = r.u64(field);
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

std::string gib(std::uint64_t bytes) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%llu bytes (%.2f GiB)", static_cast<unsigned long long>(bytes),
                double(bytes) / double(1ull << 30));
  return buf;
}

std::string describe(const ModelConfig& m) {
  return m.name + " (" + std::to_string(m.layers) + " layers, hidden " + std::to_string(m.hidden) +
         ", " + std::to_string(m.heads) + " heads, " + std::to_string(m.kv_heads) +
         " kv heads, head_dim " + std::to_string(m.head_dim) + ", ffn " + std::to_string(m.ffn) +
         ", vocab " + std::to_string(m.vocab) + ")";
}

/// Names of the fields that differ, "field a vs b" each.
class Diff {
 public:
  template <class T>
  void field(const char* name, const T& a, const T& b) {
    if (a == b) return;
    if (!text_.empty()) text_ += ", ";
    text_ += name;
    text_ += ' ';
    text_ += show(a) + " vs " + show(b);
  }
  const std::string& text() const { return text_; }

 private:
  static std::string show(const std::string& s) { return "'" + s + "'"; }
  static std::string show(bool b) { return b ? "true" : "false"; }
  static std::string show(double d) { return number(d); }
  static std::string show(RopeLayout l) { return l == RopeLayout::kGptj ? "gptj" : "neox"; }
  static std::string show(std::uint32_t v) { return std::to_string(v); }
  static std::string show(std::uint64_t v) { return std::to_string(v); }
  std::string text_;
};

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

std::string identity_mismatch(const ExecutorIdentity& server, const ExecutorIdentity& client) {
  const ModelConfig &a = server.model, &b = client.model;
  Diff shape;
  shape.field("name", a.name, b.name);
  shape.field("layers", a.layers, b.layers);
  shape.field("hidden", a.hidden, b.hidden);
  shape.field("heads", a.heads, b.heads);
  shape.field("kv_heads", a.kv_heads, b.kv_heads);
  shape.field("head_dim", a.head_dim, b.head_dim);
  shape.field("ffn", a.ffn, b.ffn);
  shape.field("vocab", a.vocab, b.vocab);
  shape.field("tie_embeddings", a.tie_embeddings, b.tie_embeddings);
  shape.field("rope_theta", a.rope_theta, b.rope_theta);
  shape.field("rope_layout", a.rope_layout, b.rope_layout);
  shape.field("rope_scaling_factor", a.rope_scaling_factor, b.rope_scaling_factor);
  shape.field("rope_low_freq_factor", a.rope_low_freq_factor, b.rope_low_freq_factor);
  shape.field("rope_high_freq_factor", a.rope_high_freq_factor, b.rope_high_freq_factor);
  shape.field("rope_original_max_positions", a.rope_original_max_positions,
              b.rope_original_max_positions);
  shape.field("rms_eps", a.rms_eps, b.rms_eps);
  shape.field("max_positions", a.max_positions, b.max_positions);
  if (!shape.text().empty()) {
    return "model mismatch: server " + describe(a) + ", client " + describe(b) + " (differs in " +
           shape.text() + ")";
  }
  if (a.dtype_bytes != b.dtype_bytes) {
    return "dtype mismatch: server " + a.name + " with " + std::to_string(a.dtype_bytes) +
           "-byte values, client " + std::to_string(b.dtype_bytes) + "-byte values";
  }
  const GpuConfig &g = server.gpu, &h = client.gpu;
  Diff gpu;
  gpu.field("name", g.name, h.name);
  gpu.field("memory_bytes", g.memory_bytes, h.memory_bytes);
  gpu.field("bf16_tflops", g.bf16_tflops, h.bf16_tflops);
  gpu.field("hbm_gbps", g.hbm_gbps, h.hbm_gbps);
  gpu.field("pcie_gbps", g.pcie_gbps, h.pcie_gbps);
  gpu.field("step_overhead_us", g.step_overhead_us, h.step_overhead_us);
  gpu.field("per_seq_overhead_us", g.per_seq_overhead_us, h.per_seq_overhead_us);
  gpu.field("mfu", g.mfu, h.mfu);
  gpu.field("mbu", g.mbu, h.mbu);
  gpu.field("pcie_efficiency", g.pcie_efficiency, h.pcie_efficiency);
  if (!gpu.text().empty()) {
    return "gpu mismatch: server " + g.name + ", client " + h.name + " (differs in " + gpu.text() +
           ")";
  }
  if (server.pool_capacity_bytes != client.pool_capacity_bytes) {
    return "pool capacity mismatch: server " + gib(server.pool_capacity_bytes) + ", client " +
           gib(client.pool_capacity_bytes) +
           " (start the server with --pool-capacity equal to the experiment's store.gpu.capacity;"
           " 0 for text mode)";
  }
  return "";
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

void encode_plan(const BatchPlan& p, std::vector<std::uint8_t>& out) {
  Writer w(out);
  w.i32(p.replica);
  w.i64(p.now);
  w.count(p.encodes.size());
  for (const auto& e : p.encodes) {
    w.u64(e.fact);
    w.u64(e.user);
    w.u32(e.tokens);
    w.u32(e.context_tokens);
    w.flag(e.store);
    w.u64(e.for_request);
    w.u32(e.position);
  }
  w.count(p.loads.size());
  for (const auto& l : p.loads) put_load(w, l);
  w.count(p.offloads.size());
  for (const auto& l : p.offloads) put_load(w, l);
  put_ids(w, p.evictions);
  put_ids(w, p.host_evictions);
  w.count(p.prompt_facts.size());
  for (const auto& f : p.prompt_facts) {
    w.u64(f.fact);
    w.u32(f.tokens);
    w.u32(f.position);
    w.flag(f.inject);
    w.flag(f.private_kv);
  }
  w.count(p.prefills.size());
  for (const auto& q : p.prefills) {
    w.u64(q.request);
    w.u64(q.user);
    for (std::uint32_t v :
         {q.header_tokens, q.footer_tokens, q.query_tokens, q.facts_begin, q.facts_end,
          q.prompt_tokens, q.computed_total, q.computed_done, q.computed_now, q.present_tokens}) {
      w.u32(v);
    }
    w.flag(q.header_cached);
    w.flag(q.first_chunk);
    w.flag(q.last_chunk);
  }
  w.count(p.decodes.size());
  for (const auto& d : p.decodes) {
    w.u64(d.request);
    w.u32(d.context_tokens);
  }
  put_ids(w, p.released);
}

void decode_plan(std::span<const std::uint8_t> payload, BatchPlan& p) {
  Reader r(payload, "plan");
  p.clear();
  p.replica = r.i32("replica");
  p.now = r.i64("now");
  p.encodes.resize(r.count("encodes", kEncodeBytes));
  for (auto& e : p.encodes) {
    e.fact = r.u64("encode.fact");
    e.user = r.u64("encode.user");
    e.tokens = r.u32("encode.tokens");
    e.context_tokens = r.u32("encode.context_tokens");
    e.store = r.flag("encode.store");
    e.for_request = r.u64("encode.for_request");
    e.position = r.u32("encode.position");
  }
  p.loads.resize(r.count("loads", kLoadBytes));
  for (auto& l : p.loads) l = get_load(r);
  p.offloads.resize(r.count("offloads", kLoadBytes));
  for (auto& l : p.offloads) l = get_load(r);
  get_ids(r, "evictions", p.evictions);
  get_ids(r, "host_evictions", p.host_evictions);
  p.prompt_facts.resize(r.count("prompt_facts", kPromptFactBytes));
  for (auto& f : p.prompt_facts) {
    f.fact = r.u64("prompt_fact.fact");
    f.tokens = r.u32("prompt_fact.tokens");
    f.position = r.u32("prompt_fact.position");
    f.inject = r.flag("prompt_fact.inject");
    f.private_kv = r.flag("prompt_fact.private_kv");
  }
  p.prefills.resize(r.count("prefills", kPrefillBytes));
  for (auto& q : p.prefills) {
    q.request = r.u64("prefill.request");
    q.user = r.u64("prefill.user");
    q.header_tokens = r.u32("prefill.header_tokens");
    q.footer_tokens = r.u32("prefill.footer_tokens");
    q.query_tokens = r.u32("prefill.query_tokens");
    q.facts_begin = r.u32("prefill.facts_begin");
    q.facts_end = r.u32("prefill.facts_end");
    q.prompt_tokens = r.u32("prefill.prompt_tokens");
    q.computed_total = r.u32("prefill.computed_total");
    q.computed_done = r.u32("prefill.computed_done");
    q.computed_now = r.u32("prefill.computed_now");
    q.present_tokens = r.u32("prefill.present_tokens");
    q.header_cached = r.flag("prefill.header_cached");
    q.first_chunk = r.flag("prefill.first_chunk");
    q.last_chunk = r.flag("prefill.last_chunk");
    if (q.facts_begin > q.facts_end || q.facts_end > p.prompt_facts.size()) {
      throw ProtocolError("plan: prefill of request " + std::to_string(q.request) +
                          " refers to prompt facts [" + std::to_string(q.facts_begin) + ", " +
                          std::to_string(q.facts_end) + ") of " +
                          std::to_string(p.prompt_facts.size()));
    }
  }
  p.decodes.resize(r.count("decodes", kDecodeBytes));
  for (auto& d : p.decodes) {
    d.request = r.u64("decode.request");
    d.context_tokens = r.u32("decode.context_tokens");
  }
  get_ids(r, "released", p.released);
  r.finish();
}

void encode_result(const BatchResult& res, std::vector<std::uint8_t>& out) {
  Writer w(out);
  w.i64(res.duration_ns);
  const PhaseTimes& t = res.phases;
  for (SimTime v :
       {t.encode_ns, t.load_ns, t.inject_ns, t.prefill_ns, t.decode_ns, t.overhead_ns}) {
    w.i64(v);
  }
  w.count(res.tokens.size());
  for (auto tok : res.tokens) w.i32(tok);
}

BatchResult decode_result(std::span<const std::uint8_t> payload) {
  Reader r(payload, "result");
  BatchResult res;
  res.duration_ns = r.i64("duration_ns");
  res.phases.encode_ns = r.i64("phases.encode_ns");
  res.phases.load_ns = r.i64("phases.load_ns");
  res.phases.inject_ns = r.i64("phases.inject_ns");
  res.phases.prefill_ns = r.i64("phases.prefill_ns");
  res.phases.decode_ns = r.i64("phases.decode_ns");
  res.phases.overhead_ns = r.i64("phases.overhead_ns");
  res.tokens.resize(r.count("tokens", 4));
  for (auto& tok : res.tokens) tok = r.i32("tokens");
  r.finish();
  return res;
}

std::string Endpoint::text() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::optional<Endpoint> parse_endpoint(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) return std::nullopt;
  std::string host = text.substr(0, colon);
  const std::string port = text.substr(colon + 1);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return std::nullopt;
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    return std::nullopt;  // an IPv6 address needs brackets
  }
  if (port.size() > 5) return std::nullopt;
  std::uint32_t value = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<std::uint32_t>(c - '0');
  }
  if (value > 65535) return std::nullopt;
  return Endpoint{host, static_cast<std::uint16_t>(value)};
}

}  // namespace inferscale::remote
