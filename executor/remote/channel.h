#pragma once
// @brief FrameChannel: one TCP connection carrying protocol frames, every read and write under a
// deadline (Boost.Asio, driven on the calling thread). Private to executor/remote/.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "executor/remote/protocol.h"

namespace inferscale::remote {

/// A channel operation that did not complete; `kind` says why.
class ChannelError : public std::runtime_error {
 public:
  enum Kind {
    kClosed,    // the peer closed the connection at a frame boundary
    kTimeout,   // the deadline passed
    kProtocol,  // a bad header or a truncated frame
    kIo,        // any other socket error
  };
  ChannelError(Kind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

class FrameChannel {
 public:
  FrameChannel();
  ~FrameChannel();
  FrameChannel(const FrameChannel&) = delete;
  FrameChannel& operator=(const FrameChannel&) = delete;

  boost::asio::io_context& context() { return io_; }
  boost::asio::ip::tcp::socket& socket() { return socket_; }
  /// "ip:port" of the peer (after connect/accept).
  std::string peer() const;

  /// Resolves and connects within `timeout_s`.
  void connect(const Endpoint& endpoint, double timeout_s);
  /// Writes a sealed frame within `timeout_s`.
  void write(const std::vector<std::uint8_t>& frame, double timeout_s);
  /// Reads one frame into `payload`: its first byte within `idle_timeout_s`, the rest of it
  /// within `frame_timeout_s`. The header is checked (check_header) before the payload is read;
  /// `payload` grows as the bytes arrive, not to the length the header claims.
  FrameHeader read(std::vector<std::uint8_t>& payload, double idle_timeout_s,
                   double frame_timeout_s, std::uint32_t max_payload_bytes = kMaxFrameBytes);
  /// Ends our side, discards what the peer still sends (at most `linger_s` and 1 MiB) so that a
  /// reply just written is not lost to a reset, then closes.
  void close_gracefully(double linger_s);
  void close();
  /// Thread-safe: closes the socket on the channel's own thread at its next operation, which
  /// then fails (used to stop a server's sessions).
  void abort_from_other_thread();

 private:
  /// Runs the io_context until the pending operation completes or `timeout_s` passes; returns
  /// false on timeout (the operation is then cancelled; the socket stays open).
  bool run_for(double timeout_s);
  /// Reads exactly `n` bytes; returns how many arrived before EOF (n when all did). A timeout's
  /// message names `deadline_s` when given (the frame's whole deadline), else `timeout_s`.
  std::size_t read_exact(std::uint8_t* data, std::size_t n, double timeout_s, const char* what,
                         double deadline_s = -1);

  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
};

}  // namespace inferscale::remote
