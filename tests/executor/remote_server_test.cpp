// The executor server on loopback: a proper client gets the in-process results; malformed,
// oversized, truncated and stalled frames end only their own session, with an error reply or a
// close; the handshake refuses a mismatched experiment with a precise message.
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <cstring>

#include "executor/remote/channel.h"
#include "executor/remote/client.h"
#include "tests/catch.h"
#include "tests/executor/remote_test_util.h"

using namespace inferscale;
using namespace inferscale::remote;
using namespace inferscale::test;

namespace {

RunConfig tiny_run(const std::string& extra = "") {
  const auto dir = temp_dir("remote_server_cfg");
  const auto trace = write_text(dir / "t.jsonl", "");
  return load_yaml(dir, tiny_config(trace, extra + "runs:\n  - name: r\n")).runs.at(0);
}

/// Raw bytes to the server, then its answer: an error frame's message, or "closed".
std::string send_raw(const std::string& endpoint, const std::vector<std::uint8_t>& bytes,
                     bool half_close = false) {
  FrameChannel ch;
  ch.connect(*parse_endpoint(endpoint), 10);
  ch.write(bytes, 10);
  if (half_close) ch.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_send);
  std::vector<std::uint8_t> payload;
  try {
    const FrameHeader h = ch.read(payload, 30, 30);
    if (h.type != static_cast<std::uint16_t>(MessageType::kError)) return "unexpected reply";
    const ErrorMessage e = decode_error(payload);
    return std::string(to_string(e.code)) + ": " + e.message;
  } catch (const ChannelError& e) {
    return e.kind() == ChannelError::kClosed ? "closed" : std::string("channel: ") + e.what();
  }
}

std::vector<std::uint8_t> header(std::uint32_t magic, std::uint16_t version, MessageType type,
                                 std::uint32_t payload_bytes) {
  std::vector<std::uint8_t> h(kHeaderBytes);
  auto put = [&h](std::size_t at, std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) h[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
  };
  put(0, magic, 4);
  put(4, version, 2);
  put(6, static_cast<std::uint16_t>(type), 2);
  put(8, 1, 4);
  put(12, payload_bytes, 4);
  return h;
}

std::vector<std::uint8_t> hello_frame(const ExecutorIdentity& id,
                                      const std::string& client = "raw test") {
  std::vector<std::uint8_t> f;
  start_frame(f);
  encode_hello(Hello{client, id}, f);
  seal_frame(f, MessageType::kHello, 1);
  return f;
}

/// The proper client's result equals the in-process cost model's, field by field.
void check_serves(const std::string& endpoint, const RunConfig& run, std::uint64_t seed) {
  RemoteExecutor remote(RemoteOptions{endpoint}, executor_identity(run));
  CostModelExecutor local(CostModel(run.model, CostRates::from_gpu(run.gpu)));
  for (std::uint64_t s = seed; s < seed + 5; ++s) {
    const BatchPlan plan = sample_plan(s);
    const BatchResult a = remote.execute(plan), b = local.execute(plan);
    CHECK(a.duration_ns == b.duration_ns);
    CHECK(a.phases.encode_ns == b.phases.encode_ns);
    CHECK(a.phases.load_ns == b.phases.load_ns);
    CHECK(a.phases.inject_ns == b.phases.inject_ns);
    CHECK(a.phases.prefill_ns == b.phases.prefill_ns);
    CHECK(a.phases.decode_ns == b.phases.decode_ns);
    CHECK(a.phases.overhead_ns == b.phases.overhead_ns);
    CHECK(a.tokens == b.tokens);
  }
  CHECK(remote.name() == "remote:cost_model@" + endpoint);
}

/// The message of the ExecutorFailure `f` throws ("" if none).
template <class F>
std::string failure(F f) {
  try {
    f();
  } catch (const ExecutorFailure& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a cost-model server on loopback prices plans exactly like the in-process model") {
  const RunConfig run = tiny_run(kRemoteStress);
  TestServer s(executor_identity(run), cost_model_factory(run));
  check_serves(s.endpoint(), run, 1);
  CHECK(s.log->wait_for("client disconnected after 5 steps"));
  CHECK(s.log->count("handshake ok") == 1);
}

TEST_CASE("malformed frames get an error reply or a close, and the server serves on") {
  const RunConfig run = tiny_run(kRemoteStress);
  TestServer s(executor_identity(run), cost_model_factory(run));
  const std::string ep = s.endpoint();
  // A session opened before the bad ones keeps working through them.
  RemoteExecutor early(RemoteOptions{ep}, executor_identity(run));
  CHECK(early.execute(sample_plan(1)).duration_ns > 0);

  SECTION("bad magic") {
    CHECK(send_raw(ep, header(0x12345678, kProtocolVersion, MessageType::kHello, 0)) ==
          "bad frame: bad magic 0x12345678 (expected 0x58455349, \"ISEX\"): not an InferScale "
          "executor frame");
  }
  SECTION("bad version") {
    CHECK(send_raw(ep, header(kMagic, 9, MessageType::kHello, 0)) ==
          "bad frame: protocol version 9 not supported (this side speaks version " +
              std::to_string(kProtocolVersion) + ")");
  }
  SECTION("unknown message type") {
    CHECK(send_raw(ep, header(kMagic, kProtocolVersion, static_cast<MessageType>(300), 0)) ==
          "bad frame: unknown message type 300");
  }
  SECTION("oversized length: refused from the header, nothing allocated") {
    // A hello's limit (kMaxHelloBytes); a later frame's is kMaxFrameBytes.
    CHECK(send_raw(ep, header(kMagic, kProtocolVersion, MessageType::kHello, 0xffffffffu)) ==
          "bad frame: frame of 4294967295 payload bytes exceeds the limit of " +
              std::to_string(kMaxHelloBytes));
  }
  SECTION("truncated payload: the client closes after 10 of 100 bytes") {
    auto bytes = header(kMagic, kProtocolVersion, MessageType::kHello, 100);
    bytes.resize(bytes.size() + 10, 0);
    CHECK(send_raw(ep, bytes, true) ==
          "bad frame: truncated frame: connection closed after 10 of 100 payload bytes");
  }
  SECTION("truncated header") {
    auto bytes = header(kMagic, kProtocolVersion, MessageType::kHello, 0);
    bytes.resize(7);
    CHECK(send_raw(ep, bytes, true) ==
          "bad frame: truncated frame header: connection closed after 7 of 16 bytes");
  }
  SECTION("garbage (an HTTP request)") {
    const std::string get = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    CHECK(send_raw(ep, std::vector<std::uint8_t>(get.begin(), get.end())).find("bad magic") !=
          std::string::npos);
  }
  SECTION("a hello whose payload does not decode") {
    auto bytes = header(kMagic, kProtocolVersion, MessageType::kHello, 8);
    bytes.insert(bytes.end(), {0xff, 0xff, 0xff, 0x7f, 1, 2, 3, 4});
    CHECK(send_raw(ep, bytes).rfind("bad message: hello: client at offset 0: string of", 0) == 0);
  }
  SECTION("execute before the handshake") {
    std::vector<std::uint8_t> f;
    start_frame(f);
    encode_plan(sample_plan(1), f);
    seal_frame(f, MessageType::kExecute, 1);
    CHECK(send_raw(ep, f) == "bad message: expected a hello message first, got execute");
  }
  SECTION("a corrupted plan after a good handshake") {
    auto bytes = hello_frame(executor_identity(run));
    std::vector<std::uint8_t> plan;
    start_frame(plan);
    encode_plan(sample_plan(1), plan);
    seal_frame(plan, MessageType::kExecute, 2);
    std::memset(plan.data() + kHeaderBytes + 12, 0xff, 4);  // the encodes count
    FrameChannel ch;
    ch.connect(*parse_endpoint(ep), 10);
    ch.write(bytes, 10);
    std::vector<std::uint8_t> payload;
    CHECK(ch.read(payload, 30, 30).type == static_cast<std::uint16_t>(MessageType::kWelcome));
    ch.write(plan, 10);
    const FrameHeader h = ch.read(payload, 30, 30);
    REQUIRE(h.type == static_cast<std::uint16_t>(MessageType::kError));
    CHECK(h.sequence == 2);  // the reply names the frame it answers
    const ErrorMessage e = decode_error(payload);
    CHECK(e.code == ErrorCode::kBadMessage);
    CHECK(e.message.rfind("plan: encodes at offset 12: 4294967295 items", 0) == 0);
  }
  SECTION("a client that disconnects in the middle of a session") {
    {
      RemoteExecutor gone(RemoteOptions{ep}, executor_identity(run));
      gone.execute(sample_plan(3));
    }
    CHECK(s.log->wait_for("client disconnected after 1 steps"));
  }
  check_serves(ep, run, 10);  // a new proper client
  CHECK(early.execute(sample_plan(2)).duration_ns > 0);
}

TEST_CASE("a stalled client is timed out, and a server over its session limit says busy") {
  const RunConfig run = tiny_run(kRemoteStress);
  ServerOptions options;
  options.frame_timeout_s = 1;
  options.max_sessions = 1;
  TestServer s(executor_identity(run), cost_model_factory(run), options);
  {
    // Half a header, then silence: the server gives up on the frame and says so.
    auto bytes = header(kMagic, kProtocolVersion, MessageType::kHello, 0);
    bytes.resize(5);
    const std::string reply = send_raw(s.endpoint(), bytes);
    CHECK(reply.rfind("timeout: nothing received within 1 s while waiting for the rest of a "
                      "frame header",
                      0) == 0);
  }
  CHECK(s.log->wait_for("closed (timeout)"));
  RemoteExecutor first(RemoteOptions{s.endpoint()}, executor_identity(run));
  const std::string busy =
      failure([&] { RemoteExecutor second(RemoteOptions{s.endpoint()}, executor_identity(run)); });
  CHECK(busy == s.endpoint() +
                    ": server error (busy): the server is busy (1 sessions open; see "
                    "--max-sessions)");
  CHECK(first.execute(sample_plan(1)).duration_ns > 0);
}

TEST_CASE("the handshake refuses a mismatched experiment with the server's message") {
  const RunConfig run = tiny_run(kRemoteStress);
  TestServer s(executor_identity(run), cost_model_factory(run));

  RunConfig other = run;
  other.model.layers = 2;
  other.model.name = "tiny-2";
  const std::string model =
      failure([&] { RemoteExecutor r(RemoteOptions{s.endpoint()}, executor_identity(other)); });
  CHECK(model.rfind(s.endpoint() + ": the server refused the experiment: model mismatch: server "
                                   "tiny (1 layers, hidden 4, 1 heads, 1 kv heads, head_dim 4, "
                                   "ffn 4, vocab 8), client tiny-2 (2 layers",
                    0) == 0);

  other = run;
  other.store.gpu.capacity_bytes /= 2;
  CHECK(failure([&] {
          RemoteExecutor r(RemoteOptions{s.endpoint()}, executor_identity(other));
        }).find("pool capacity mismatch: server 24576 bytes") != std::string::npos);

  other = run;
  other.model.dtype_bytes = 4;
  CHECK(failure([&] {
          RemoteExecutor r(RemoteOptions{s.endpoint()}, executor_identity(other));
        }).find("dtype mismatch: server tiny with 2-byte values, client 4-byte values") !=
        std::string::npos);
  CHECK(
      s.log->wait_for("closed (mismatch)", 3));  // each refusal ended its session on the server too
  check_serves(s.endpoint(), run, 20);
}

TEST_CASE("an unreachable endpoint or a bad one fails with ExecutorFailure, not a hang") {
  const RunConfig run = tiny_run();
  std::uint16_t port = 0;
  {
    // A port that was just listening and is closed now: connection refused.
    TestServer s(executor_identity(run), cost_model_factory(run));
    port = s.server->port();
  }
  const std::string ep = "127.0.0.1:" + std::to_string(port);
  const std::string refused =
      failure([&] { RemoteExecutor r(RemoteOptions{ep}, executor_identity(run)); });
  CHECK(refused.rfind(ep + ": cannot connect: ", 0) == 0);
  CHECK(refused.find("is `inferscale serve-executor` listening there?") != std::string::npos);
  CHECK(failure([&] { RemoteExecutor r(RemoteOptions{"nowhere"}, executor_identity(run)); }) ==
        "nowhere: not a HOST:PORT endpoint");
}

TEST_CASE("connections in their handshake hold no session slot, and a hello is small and timed") {
  // Before: each connection counted toward --max-sessions from its accept, and a header alone
  // made the server size a 64 MiB buffer: a few silent connections made it busy for everyone.
  const RunConfig run = tiny_run(kRemoteStress);
  ServerOptions options;
  options.max_sessions = 1;
  options.handshake_timeout_s = 2;
  TestServer s(executor_identity(run), cost_model_factory(run), options);
  std::vector<std::unique_ptr<FrameChannel>> silent;
  for (int i = 0; i < 8; ++i) {
    silent.push_back(std::make_unique<FrameChannel>());
    silent.back()->connect(*parse_endpoint(s.endpoint()), 10);
  }
  REQUIRE(s.log->wait_for(": connected", 8));
  {
    RemoteExecutor client(RemoteOptions{s.endpoint()}, executor_identity(run));
    CHECK(client.execute(sample_plan(1)).duration_ns > 0);
  }
  // A hello longer than a hello may be is refused at its header, before any payload.
  const std::string big = send_raw(
      s.endpoint(), header(kMagic, kProtocolVersion, MessageType::kHello, kMaxFrameBytes));
  CHECK(big == "bad frame: frame of " + std::to_string(kMaxFrameBytes) +
                   " payload bytes exceeds the limit of " + std::to_string(kMaxHelloBytes));
  // The silent ones are closed at the handshake deadline.
  CHECK(s.log->wait_for("closed (timeout): nothing received within 2 s while waiting for the "
                        "next frame",
                        8));
}

TEST_CASE("a frame's buffer grows with the bytes that arrive, not with the length claimed") {
  namespace asio = boost::asio;
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io, {asio::ip::address_v4::loopback(), 0});
  FrameChannel reader;
  reader.connect(Endpoint{"127.0.0.1", acceptor.local_endpoint().port()}, 10);
  asio::ip::tcp::socket peer(io);
  acceptor.accept(peer);
  // A header claiming 32 MiB, then 100 bytes, then the end.
  std::vector<std::uint8_t> bytes = header(kMagic, kProtocolVersion, MessageType::kExecute, 32u << 20);
  bytes.resize(bytes.size() + 100, 7);
  asio::write(peer, asio::buffer(bytes));
  peer.close();
  std::vector<std::uint8_t> payload;
  std::string error;
  try {
    reader.read(payload, 10, 10);
  } catch (const ChannelError& e) {
    error = e.what();
  }
  CHECK(error == "truncated frame: connection closed after 100 of 33554432 payload bytes");
  CHECK(payload.capacity() < (std::size_t{1} << 20));
}

TEST_CASE("client-sent names reach the server's log with control characters escaped") {
  const RunConfig run = tiny_run(kRemoteStress);
  TestServer s(executor_identity(run), cost_model_factory(run));
  // A newline and an escape sequence in the client's name would forge a log line (and recolour
  // the terminal) if logged raw.
  const std::string reply = send_raw(
      s.endpoint(),
      hello_frame(executor_identity(run), "evil\nserve-executor: session 9: forged\x1b[2K"));
  CHECK(reply == "unexpected reply");  // a welcome: the handshake itself is fine
  REQUIRE(s.log->wait_for("handshake ok"));
  const std::string all = s.log->all();
  CHECK(all.find("evil\\x0aserve-executor: session 9: forged\\x1b[2K") != std::string::npos);
  CHECK(all.find('\x1b') == std::string::npos);
  CHECK(all.find("evil\nserve-executor") == std::string::npos);
}
