// The remote executor's wire protocol: every field round-trips; truncated, corrupted and
// oversized input fails with a ProtocolError that says what is wrong (never a crash).
#include <cstring>
#include <random>

#include "executor/remote/protocol.h"
#include "tests/catch.h"

using namespace inferscale;
using namespace inferscale::remote;

namespace {

/// Random values over each field's whole range (bools both ways, ids up to 2^64-1).
class RandomPlans {
 public:
  explicit RandomPlans(std::uint64_t seed) : rng_(seed) {}

  BatchPlan plan() {
    BatchPlan p;
    p.replica = static_cast<std::int32_t>(u32());
    p.now = static_cast<SimTime>(u64());
    for (std::size_t i = 0, n = count(); i < n; ++i) {
      p.encodes.push_back(FactEncode{u64(), u64(), u32(), u32(), flag(), u64(), u32()});
    }
    for (std::size_t i = 0, n = count(); i < n; ++i) p.loads.push_back(load());
    for (std::size_t i = 0, n = count(); i < n; ++i) p.async_loads.push_back(load());
    for (std::size_t i = 0, n = count(); i < n; ++i) p.offloads.push_back(load());
    for (std::size_t i = 0, n = count(); i < n; ++i) p.async_offloads.push_back(load());
    for (std::size_t i = 0, n = count(); i < n; ++i) p.evictions.push_back(u64());
    for (std::size_t i = 0, n = count(); i < n; ++i) p.host_evictions.push_back(u64());
    for (std::size_t i = 0, n = count(); i < n; ++i) {
      p.prompt_facts.push_back(PromptFact{u64(), u32(), u32(), flag(), flag()});
    }
    for (std::size_t i = 0, n = count(); i < n; ++i) {
      PrefillItem q{u64(), u64(), u32(), u32(), u32()};
      const auto facts = static_cast<std::uint32_t>(p.prompt_facts.size());
      q.facts_begin = facts == 0 ? 0 : u32() % (facts + 1);
      q.facts_end =
          q.facts_begin + (facts == q.facts_begin ? 0 : u32() % (facts - q.facts_begin + 1));
      q.prompt_tokens = u32();
      q.computed_total = u32();
      q.computed_done = u32();
      q.computed_now = u32();
      q.present_tokens = u32();
      q.header_cached = flag();
      q.first_chunk = flag();
      q.last_chunk = flag();
      p.prefills.push_back(q);
    }
    for (std::size_t i = 0, n = count(); i < n; ++i) p.decodes.push_back(DecodeItem{u64(), u32()});
    for (std::size_t i = 0, n = count(); i < n; ++i) p.released.push_back(u64());
    return p;
  }

  BatchResult result() {
    BatchResult r;
    r.duration_ns = static_cast<SimTime>(u64());
    r.phases = PhaseTimes{static_cast<SimTime>(u64()), static_cast<SimTime>(u64()),
                          static_cast<SimTime>(u64()), static_cast<SimTime>(u64()),
                          static_cast<SimTime>(u64()), static_cast<SimTime>(u64())};
    for (std::size_t i = 0, n = count(); i < n; ++i)
      r.tokens.push_back(static_cast<std::int32_t>(u32()));
    return r;
  }

  std::uint64_t u64() { return rng_(); }
  std::uint32_t u32() { return static_cast<std::uint32_t>(rng_()); }
  bool flag() { return (rng_() & 1) != 0; }
  double f64() { return std::uniform_real_distribution<double>(-1e6, 1e6)(rng_); }
  std::size_t count() { return static_cast<std::size_t>(rng_() % 6); }

 private:
  FactLoad load() { return FactLoad{u64(), u32(), u64(), u64(), u32()}; }
  std::mt19937_64 rng_;
};

void check_same(const FactLoad& a, const FactLoad& b) {
  CHECK(a.fact == b.fact);
  CHECK(a.tokens == b.tokens);
  CHECK(a.bytes == b.bytes);
  CHECK(a.for_request == b.for_request);
  CHECK(a.position == b.position);
}

/// Field by field, so a field that an encoder and decoder both forget still fails.
void check_same(const BatchPlan& a, const BatchPlan& b) {
  CHECK(a.replica == b.replica);
  CHECK(a.now == b.now);
  REQUIRE(a.encodes.size() == b.encodes.size());
  for (std::size_t i = 0; i < a.encodes.size(); ++i) {
    const auto &x = a.encodes[i], &y = b.encodes[i];
    CHECK(x.fact == y.fact);
    CHECK(x.user == y.user);
    CHECK(x.tokens == y.tokens);
    CHECK(x.context_tokens == y.context_tokens);
    CHECK(x.store == y.store);
    CHECK(x.for_request == y.for_request);
    CHECK(x.position == y.position);
  }
  REQUIRE(a.loads.size() == b.loads.size());
  for (std::size_t i = 0; i < a.loads.size(); ++i) check_same(a.loads[i], b.loads[i]);
  REQUIRE(a.async_loads.size() == b.async_loads.size());
  for (std::size_t i = 0; i < a.async_loads.size(); ++i) {
    check_same(a.async_loads[i], b.async_loads[i]);
  }
  REQUIRE(a.offloads.size() == b.offloads.size());
  for (std::size_t i = 0; i < a.offloads.size(); ++i) check_same(a.offloads[i], b.offloads[i]);
  REQUIRE(a.async_offloads.size() == b.async_offloads.size());
  for (std::size_t i = 0; i < a.async_offloads.size(); ++i) {
    check_same(a.async_offloads[i], b.async_offloads[i]);
  }
  CHECK(a.evictions == b.evictions);
  CHECK(a.host_evictions == b.host_evictions);
  REQUIRE(a.prompt_facts.size() == b.prompt_facts.size());
  for (std::size_t i = 0; i < a.prompt_facts.size(); ++i) {
    const auto &x = a.prompt_facts[i], &y = b.prompt_facts[i];
    CHECK(x.fact == y.fact);
    CHECK(x.tokens == y.tokens);
    CHECK(x.position == y.position);
    CHECK(x.inject == y.inject);
    CHECK(x.private_kv == y.private_kv);
  }
  REQUIRE(a.prefills.size() == b.prefills.size());
  for (std::size_t i = 0; i < a.prefills.size(); ++i) {
    const auto &x = a.prefills[i], &y = b.prefills[i];
    CHECK(x.request == y.request);
    CHECK(x.user == y.user);
    CHECK(x.header_tokens == y.header_tokens);
    CHECK(x.footer_tokens == y.footer_tokens);
    CHECK(x.query_tokens == y.query_tokens);
    CHECK(x.facts_begin == y.facts_begin);
    CHECK(x.facts_end == y.facts_end);
    CHECK(x.prompt_tokens == y.prompt_tokens);
    CHECK(x.computed_total == y.computed_total);
    CHECK(x.computed_done == y.computed_done);
    CHECK(x.computed_now == y.computed_now);
    CHECK(x.present_tokens == y.present_tokens);
    CHECK(x.header_cached == y.header_cached);
    CHECK(x.first_chunk == y.first_chunk);
    CHECK(x.last_chunk == y.last_chunk);
  }
  REQUIRE(a.decodes.size() == b.decodes.size());
  for (std::size_t i = 0; i < a.decodes.size(); ++i) {
    CHECK(a.decodes[i].request == b.decodes[i].request);
    CHECK(a.decodes[i].context_tokens == b.decodes[i].context_tokens);
  }
  CHECK(a.released == b.released);
}

std::vector<std::uint8_t> payload_of(const BatchPlan& p) {
  std::vector<std::uint8_t> out;
  encode_plan(p, out);
  return out;
}

/// The exception message of `f`, or "" when it did not throw a ProtocolError.
template <class F>
std::string protocol_error(F f) {
  try {
    f();
  } catch (const ProtocolError& e) {
    return e.what();
  }
  return "";
}

ExecutorIdentity identity() {
  ExecutorIdentity id;
  id.model = ModelConfig{"llama-3.1-8b", 32, 4096, 32, 8, 128, 14336, 128256};
  id.gpu.name = "h200";
  id.gpu.memory_bytes = 141'000'000'000ull;
  id.gpu.bf16_tflops = 989;
  id.pool_capacity_bytes = 42'300'000'000ull;
  return id;
}

}  // namespace

TEST_CASE("random plans and results round-trip field by field") {
  RandomPlans gen(2024);
  BatchPlan decoded;
  decoded.evictions = {1, 2, 3};  // reused plans are cleared first
  for (int i = 0; i < 300; ++i) {
    const BatchPlan p = gen.plan();
    decode_plan(payload_of(p), decoded);
    check_same(p, decoded);
    const BatchResult r = gen.result();
    std::vector<std::uint8_t> out;
    encode_result(r, out);
    const BatchResult s = decode_result(out);
    CHECK(s.duration_ns == r.duration_ns);
    CHECK(s.phases.encode_ns == r.phases.encode_ns);
    CHECK(s.phases.load_ns == r.phases.load_ns);
    CHECK(s.phases.inject_ns == r.phases.inject_ns);
    CHECK(s.phases.prefill_ns == r.phases.prefill_ns);
    CHECK(s.phases.decode_ns == r.phases.decode_ns);
    CHECK(s.phases.overhead_ns == r.phases.overhead_ns);
    CHECK(s.tokens == r.tokens);
  }
}

TEST_CASE("encoding is explicit little-endian, independent of the host") {
  BatchPlan p;
  p.replica = 0x01020304;
  p.now = -2;
  const auto out = payload_of(p);
  REQUIRE(out.size() == 4 + 8 + 11 * 4);  // replica, now, eleven empty lists
  CHECK(out[0] == 0x04);
  CHECK(out[3] == 0x01);
  for (int i = 4; i < 12; ++i) CHECK(out[i] == (i == 4 ? 0xfe : 0xff));
}

TEST_CASE("handshake messages round-trip every identity field") {
  RandomPlans gen(7);
  Hello h;
  h.client = "inferscale test";
  ModelConfig& m = h.identity.model;
  m = ModelConfig{"m",       gen.u32(), gen.u32(), gen.u32(), gen.u32(),
                  gen.u32(), gen.u32(), gen.u32(), gen.u32()};
  m.tie_embeddings = true;
  m.rope_theta = gen.f64();
  m.rope_layout = RopeLayout::kGptj;
  m.rope_scaling_factor = gen.f64();
  m.rope_low_freq_factor = gen.f64();
  m.rope_high_freq_factor = gen.f64();
  m.rope_original_max_positions = gen.u32();
  m.rms_eps = gen.f64();
  m.max_positions = gen.u32();
  GpuConfig& g = h.identity.gpu;
  g = GpuConfig{"g",       gen.u64(), gen.f64(), gen.f64(), gen.f64(),
                gen.f64(), gen.f64(), gen.f64(), gen.f64(), gen.f64()};
  h.identity.pool_capacity_bytes = gen.u64();
  std::vector<std::uint8_t> out;
  encode_hello(h, out);
  const Hello d = decode_hello(out);
  CHECK(d.client == h.client);
  // Every field is compared by the mismatch check itself, and by hand for a few.
  CHECK(identity_mismatch(d.identity, h.identity).empty());
  CHECK(d.identity.model.rope_layout == RopeLayout::kGptj);
  CHECK(d.identity.model.dtype_bytes == m.dtype_bytes);
  CHECK(d.identity.gpu.pcie_efficiency == g.pcie_efficiency);
  CHECK(d.identity.pool_capacity_bytes == h.identity.pool_capacity_bytes);

  out.clear();
  encode_welcome(Welcome{"cost_model", "inferscale 0.1.0"}, out);
  CHECK(decode_welcome(out).executor == "cost_model");
  out.clear();
  encode_error(ErrorMessage{ErrorCode::kMismatch, "model mismatch: x"}, out);
  const ErrorMessage e = decode_error(out);
  CHECK(e.code == ErrorCode::kMismatch);
  CHECK(e.message == "model mismatch: x");
}

TEST_CASE("frame headers: sealed frames decode, and bad magic, version, type and size are named") {
  std::vector<std::uint8_t> frame;
  start_frame(frame);
  encode_plan(BatchPlan{}, frame);
  seal_frame(frame, MessageType::kExecute, 77);
  FrameHeader h = decode_header(frame.data());
  CHECK(h.magic == kMagic);
  CHECK(std::memcmp(frame.data(), "ISEX", 4) == 0);
  CHECK(h.version == kProtocolVersion);
  CHECK(h.type == static_cast<std::uint16_t>(MessageType::kExecute));
  CHECK(h.sequence == 77);
  CHECK(h.payload_bytes == frame.size() - kHeaderBytes);
  CHECK_NOTHROW(check_header(h));

  FrameHeader bad = h;
  bad.magic = 0x20544547;  // "GET "
  CHECK(protocol_error([&] { check_header(bad); }).find("bad magic 0x20544547") !=
        std::string::npos);
  bad = h;
  bad.version = 9;
  CHECK(protocol_error([&] { check_header(bad); }).find("protocol version 9 not supported") !=
        std::string::npos);
  bad = h;
  bad.type = 42;
  CHECK(protocol_error([&] { check_header(bad); }).find("unknown message type 42") !=
        std::string::npos);
  bad = h;
  bad.payload_bytes = kMaxFrameBytes + 1;
  CHECK(protocol_error([&] { check_header(bad); }).find("exceeds the limit") != std::string::npos);
  bad.payload_bytes = 1000;
  CHECK(protocol_error([&] { check_header(bad, 999); }).find("exceeds the limit of 999") !=
        std::string::npos);
}

TEST_CASE("every truncation of a plan, result or hello fails cleanly") {
  RandomPlans gen(99);
  BatchPlan p = gen.plan();
  while (p.prefills.empty() || p.encodes.empty()) p = gen.plan();
  const auto full = payload_of(p);
  BatchPlan out;
  for (std::size_t n = 0; n < full.size(); ++n) {
    INFO("first " << n << " of " << full.size() << " bytes");
    const std::string msg =
        protocol_error([&] { decode_plan(std::span<const std::uint8_t>(full.data(), n), out); });
    CHECK(msg.rfind("plan: ", 0) == 0);
  }
  std::vector<std::uint8_t> result;
  encode_result(gen.result(), result);
  for (std::size_t n = 0; n < result.size(); ++n) {
    CHECK_THROWS_AS(decode_result(std::span<const std::uint8_t>(result.data(), n)), ProtocolError);
  }
  std::vector<std::uint8_t> hello;
  encode_hello(Hello{"c", identity()}, hello);
  for (std::size_t n = 0; n < hello.size(); ++n) {
    CHECK_THROWS_AS(decode_hello(std::span<const std::uint8_t>(hello.data(), n)), ProtocolError);
  }
}

TEST_CASE("corrupted plans: huge counts, bad booleans, bad fact ranges, trailing bytes") {
  BatchPlan p;
  p.prompt_facts.push_back(PromptFact{1, 10, 0, true, false});
  PrefillItem q;
  q.facts_end = 1;
  p.prefills.push_back(q);
  const auto good = payload_of(p);
  BatchPlan out;
  REQUIRE_NOTHROW(decode_plan(good, out));

  auto corrupt = [&](std::size_t offset, std::vector<std::uint8_t> bytes) {
    auto b = good;
    std::copy(bytes.begin(), bytes.end(), b.begin() + static_cast<std::ptrdiff_t>(offset));
    return protocol_error([&] { decode_plan(b, out); });
  };
  // The encodes count (after replica and now): 2^32-1 items cannot fit in what is left, and
  // nothing is allocated for them.
  CHECK(corrupt(12, {0xff, 0xff, 0xff, 0xff}).find("encodes at offset 12: 4294967295 items") !=
        std::string::npos);
  // prompt_facts list: count at 40, the fact at 44: id 8, tokens 4, position 4, inject at 60.
  CHECK(corrupt(60, {7}).find("prompt_fact.inject at offset 60: boolean byte 7") !=
        std::string::npos);
  // The prefill's facts_end (prefill at 66 after its count: request, user, header, footer,
  // query, facts_begin, then facts_end at 66 + 16 + 16 = 98).
  CHECK(corrupt(98, {5, 0, 0, 0}).find("refers to prompt facts [0, 5) of 1") != std::string::npos);
  auto longer = good;
  longer.push_back(0);
  CHECK(protocol_error([&] { decode_plan(longer, out); }).find("1 unexpected bytes") !=
        std::string::npos);

  // Random corruption never does worse than a ProtocolError.
  std::mt19937_64 rng(5);
  RandomPlans gen(6);
  for (int i = 0; i < 2000; ++i) {
    auto b = payload_of(gen.plan());
    for (int k = 0; k < 3; ++k) b[rng() % b.size()] = static_cast<std::uint8_t>(rng());
    try {
      decode_plan(b, out);
    } catch (const ProtocolError&) {
    }
  }
  SUCCEED("no crash, no other exception");
}

TEST_CASE("identity mismatches are named precisely") {
  const ExecutorIdentity server = identity();
  CHECK(identity_mismatch(server, server).empty());

  ExecutorIdentity client = server;
  client.model.name = "mistral-7b";
  client.model.ffn = 14000;
  const std::string model = identity_mismatch(server, client);
  CHECK(model.rfind("model mismatch: server llama-3.1-8b (32 layers, hidden 4096, 32 heads, 8 kv "
                    "heads, head_dim 128, ffn 14336, vocab 128256), client mistral-7b (32 layers",
                    0) == 0);
  CHECK(model.find("ffn 14336 vs 14000") != std::string::npos);

  client = server;
  client.model.dtype_bytes = 4;
  CHECK(identity_mismatch(server, client) ==
        "dtype mismatch: server llama-3.1-8b with 2-byte values, client 4-byte values");

  client = server;
  client.gpu.name = "h100";
  CHECK(identity_mismatch(server, client).rfind("gpu mismatch: server h200, client h100", 0) == 0);

  client = server;
  client.pool_capacity_bytes = 0;
  CHECK(identity_mismatch(server, client)
            .rfind("pool capacity mismatch: server 42300000000 bytes (39.39 GiB), client 0 bytes",
                   0) == 0);
}

TEST_CASE("endpoints: host:port and [v6]:port") {
  CHECK(parse_endpoint("127.0.0.1:7070")->port == 7070);
  CHECK(parse_endpoint("gpu-box:1")->host == "gpu-box");
  CHECK(parse_endpoint("[::1]:7070")->host == "::1");
  CHECK(parse_endpoint("[::1]:7070")->text() == "[::1]:7070");
  CHECK(parse_endpoint("host:0")->port == 0);
  for (const char* bad :
       {"", "7070", ":7070", "host:", "host:65536", "host:7x", "::1:7070", "[]:1", "host:123456"}) {
    INFO(bad);
    CHECK_FALSE(parse_endpoint(bad).has_value());
  }
}
