#include "executor/remote/client.h"

#include <cstdio>

#include "executor/remote/channel.h"

namespace inferscale::remote {

namespace {

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g s", s);
  return buf;
}

}  // namespace

RemoteExecutor::RemoteExecutor(RemoteOptions options, const ExecutorIdentity& identity)
    : options_(std::move(options)), channel_(std::make_unique<FrameChannel>()) {
  const auto endpoint = parse_endpoint(options_.endpoint);
  if (!endpoint || endpoint->port == 0) fail("not a HOST:PORT endpoint");
  try {
    channel_->connect(*endpoint, options_.connect_timeout_s);
  } catch (const ChannelError& e) {
    fail(std::string(e.what()) + " (is `inferscale serve-executor` listening there?)");
  }
  start_frame(frame_);
  encode_hello(Hello{"inferscale " INFERSCALE_VERSION, identity}, frame_);
  seal_frame(frame_, MessageType::kHello, ++sequence_);
  try {
    channel_->write(frame_, options_.timeout_s);
  } catch (const ChannelError& e) {
    fail(std::string("handshake: ") + e.what());
  }
  receive(sequence_, MessageType::kWelcome, "the handshake's answer");
  try {
    server_executor_ = decode_welcome(payload_).executor;
  } catch (const ProtocolError& e) {
    fail(std::string("malformed handshake answer: ") + e.what());
  }
}

RemoteExecutor::~RemoteExecutor() = default;

std::string RemoteExecutor::name() const {
  return "remote:" + server_executor_ + "@" + options_.endpoint;
}

void RemoteExecutor::fail(const std::string& what) {
  failure_ = options_.endpoint + ": " + what;
  channel_->close();
  throw ExecutorFailure(failure_);
}

FrameHeader RemoteExecutor::receive(std::uint32_t sequence, MessageType expected,
                                    const char* waiting_for) {
  FrameHeader h;
  try {
    h = channel_->read(payload_, options_.timeout_s, options_.timeout_s);
  } catch (const ChannelError& e) {
    switch (e.kind()) {
      case ChannelError::kClosed:
        fail(std::string("the server closed the connection while we waited for ") + waiting_for +
             " (server stopped or crashed?)");
      case ChannelError::kTimeout:
        fail("no answer within " + seconds(options_.timeout_s) +
             " (executor.timeout_s) while waiting for " + waiting_for);
      default:
        fail(std::string("while waiting for ") + waiting_for + ": " + e.what());
    }
  }
  if (h.type == static_cast<std::uint16_t>(MessageType::kError)) {
    ErrorMessage m;
    try {
      m = decode_error(payload_);
    } catch (const ProtocolError& e) {
      fail(std::string("malformed error message from the server: ") + e.what());
    }
    if (m.code == ErrorCode::kMismatch) fail("the server refused the experiment: " + m.message);
    fail(std::string("server error (") + to_string(m.code) + "): " + m.message);
  }
  if (h.type != static_cast<std::uint16_t>(expected)) {
    fail(std::string("unexpected ") + to_string(static_cast<MessageType>(h.type)) +
         " message while waiting for " + waiting_for);
  }
  if (h.sequence != sequence) {
    fail("answer to frame " + std::to_string(h.sequence) + " while waiting for frame " +
         std::to_string(sequence));
  }
  return h;
}

BatchResult RemoteExecutor::execute(const BatchPlan& plan) {
  if (!failure_.empty()) throw ExecutorFailure(failure_);
  start_frame(frame_);
  encode_plan(plan, frame_);
  const std::uint32_t sequence = ++sequence_;
  try {
    seal_frame(frame_, MessageType::kExecute, sequence);
  } catch (const ProtocolError& e) {
    fail(e.what());
  }
  try {
    channel_->write(frame_, options_.timeout_s);
  } catch (const ChannelError& e) {
    fail(std::string("sending a step: ") + e.what() + " (server stopped or crashed?)");
  }
  receive(sequence, MessageType::kResult, "a step's result");
  try {
    return decode_result(payload_);
  } catch (const ProtocolError& e) {
    fail(std::string("malformed result: ") + e.what());
  }
}

}  // namespace inferscale::remote
