#include "executor/remote/channel.h"

#include <algorithm>
#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstdio>

namespace inferscale::remote {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g s", s);
  return buf;
}

bool peer_gone(const error_code& ec) {
  return ec == asio::error::eof || ec == asio::error::connection_reset ||
         ec == asio::error::broken_pipe || ec == asio::error::connection_aborted;
}

}  // namespace

FrameChannel::FrameChannel() : socket_(io_) {}

FrameChannel::~FrameChannel() {
  close();
}

std::string FrameChannel::peer() const {
  error_code ec;
  const auto ep = socket_.remote_endpoint(ec);
  if (ec) return "?";
  return Endpoint{ep.address().to_string(), ep.port()}.text();
}

bool FrameChannel::run_for(double timeout_s) {
  const double capped = std::clamp(timeout_s, 0.0, 1e6);
  io_.restart();
  io_.run_for(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(capped)));
  if (io_.stopped()) return true;  // ran out of work: the operation completed
  // Abort the operation (its handler runs now) but keep the socket: a server still answers a
  // stalled client with an error frame.
  error_code ignored;
  socket_.cancel(ignored);
  io_.run();
  return false;
}

void FrameChannel::connect(const Endpoint& endpoint, double timeout_s) {
  error_code ec;
  std::vector<tcp::endpoint> candidates;
  const auto address = asio::ip::make_address(endpoint.host, ec);
  if (!ec) {
    candidates.emplace_back(address, endpoint.port);
  } else {
    // A name: the system resolver (hosts file, DNS) answers within its own timeouts.
    tcp::resolver resolver(io_);
    const auto results = resolver.resolve(endpoint.host, std::to_string(endpoint.port), ec);
    if (ec) {
      throw ChannelError(ChannelError::kIo,
                         "cannot resolve '" + endpoint.host + "': " + ec.message());
    }
    for (const auto& r : results) candidates.push_back(r.endpoint());
  }
  error_code result = asio::error::host_not_found;
  asio::async_connect(socket_, candidates,
                      [&](const error_code& e, const tcp::endpoint&) { result = e; });
  if (!run_for(timeout_s)) {
    throw ChannelError(ChannelError::kTimeout, "no connection within " + seconds(timeout_s));
  }
  if (result) throw ChannelError(ChannelError::kIo, "cannot connect: " + result.message());
  socket_.set_option(tcp::no_delay(true), ec);
}

void FrameChannel::write(const std::vector<std::uint8_t>& frame, double timeout_s) {
  error_code result;
  asio::async_write(socket_, asio::buffer(frame),
                    [&](const error_code& e, std::size_t) { result = e; });
  if (!run_for(timeout_s)) {
    throw ChannelError(ChannelError::kTimeout,
                       "could not send a frame within " + seconds(timeout_s));
  }
  if (peer_gone(result)) {
    throw ChannelError(ChannelError::kClosed, "connection closed by the peer while sending");
  }
  if (result) throw ChannelError(ChannelError::kIo, "send failed: " + result.message());
}

std::size_t FrameChannel::read_exact(std::uint8_t* data, std::size_t n, double timeout_s,
                                     const char* what, double deadline_s) {
  error_code result;
  std::size_t got = 0;
  asio::async_read(socket_, asio::buffer(data, n), [&](const error_code& e, std::size_t k) {
    result = e;
    got = k;
  });
  if (!run_for(timeout_s)) {
    throw ChannelError(ChannelError::kTimeout,
                       std::string("nothing received within ") +
                           seconds(deadline_s >= 0 ? deadline_s : timeout_s) +
                           " while waiting for " + what);
  }
  if (peer_gone(result)) return got;
  if (result)
    throw ChannelError(ChannelError::kIo, std::string("receive failed: ") + result.message());
  return got;
}

FrameHeader FrameChannel::read(std::vector<std::uint8_t>& payload, double idle_timeout_s,
                               double frame_timeout_s, std::uint32_t max_payload_bytes) {
  std::uint8_t head[kHeaderBytes];
  if (read_exact(head, 1, idle_timeout_s, "the next frame") == 0) {
    throw ChannelError(ChannelError::kClosed, "connection closed by the peer");
  }
  const std::size_t got =
      1 + read_exact(head + 1, kHeaderBytes - 1, frame_timeout_s, "the rest of a frame header");
  if (got < kHeaderBytes) {
    throw ChannelError(ChannelError::kProtocol, "truncated frame header: connection closed after " +
                                                    std::to_string(got) + " of " +
                                                    std::to_string(kHeaderBytes) + " bytes");
  }
  const FrameHeader h = decode_header(head);
  try {
    check_header(h, max_payload_bytes);
  } catch (const ProtocolError& e) {
    throw ChannelError(ChannelError::kProtocol, e.what());
  }
  // The buffer grows as bytes arrive (doubling from 64 KiB), never to the length a header only
  // claims: 16 bytes must not make the peer hold 64 MiB.
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(std::max(frame_timeout_s, 0.0));
  payload.clear();
  std::size_t body = 0;
  while (body < h.payload_bytes) {
    const std::size_t chunk =
        std::min<std::size_t>(h.payload_bytes - body, std::max<std::size_t>(body, 64u << 10));
    payload.resize(body + chunk);
    const double left =
        std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    const std::size_t got = read_exact(payload.data() + body, chunk, std::max(left, 0.0),
                                       "the rest of a frame", frame_timeout_s);
    body += got;
    if (got < chunk) {
      payload.resize(body);
      throw ChannelError(ChannelError::kProtocol,
                         "truncated frame: connection closed after " + std::to_string(body) +
                             " of " + std::to_string(h.payload_bytes) + " payload bytes");
    }
  }
  return h;
}

void FrameChannel::close_gracefully(double linger_s) {
  if (!socket_.is_open()) return;
  error_code ec;
  socket_.shutdown(tcp::socket::shutdown_send, ec);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(std::clamp(linger_s, 0.0, 60.0));
  std::array<std::uint8_t, 4096> sink;
  std::size_t drained = 0;
  while (!ec && socket_.is_open() && drained < (1u << 20)) {
    const double left =
        std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) break;
    std::size_t n = 0;
    socket_.async_read_some(asio::buffer(sink), [&](const error_code& e, std::size_t k) {
      ec = e;
      n = k;
    });
    if (!run_for(left)) break;
    drained += n;
  }
  close();
}

void FrameChannel::close() {
  error_code ignored;
  if (socket_.is_open()) socket_.close(ignored);
}

void FrameChannel::abort_from_other_thread() {
  asio::post(io_, [this] {
    error_code ignored;
    socket_.close(ignored);
  });
}

}  // namespace inferscale::remote
