#pragma once
// @brief ExecutorServer: hosts executors for remote clients (Boost.Asio). One session per
// connection, each on its own thread with its own executor; a session whose client sends a bad
// frame, stalls or disconnects ends alone (with an error reply when possible), the others go on.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "executor/executor.h"
#include "executor/remote/protocol.h"

namespace inferscale::remote {

struct ServerOptions {
  std::string host = "127.0.0.1";  // loopback unless asked otherwise
  std::uint16_t port = 7070;       // 0: any free port (port() says which)
  unsigned max_sessions = 8;       // sessions past their handshake beyond this: refused (busy)
  double idle_timeout_s = 600;     // a session with no new frame for this long is closed
  double frame_timeout_s = 30;     // the rest of a frame once it started; replies
  double handshake_timeout_s = 5;  // a connection sends its whole hello within this
  std::uint32_t max_frame_bytes = kMaxFrameBytes;
  /// One line per session event (connected, handshake, refused, closed...); null: stderr. Control
  /// characters (from client-sent names) arrive escaped as \xNN: a line is one line.
  std::function<void(const std::string&)> log;
};

/// Makes one session's executor, after its handshake succeeded.
using SessionExecutorFactory = std::function<std::unique_ptr<Executor>()>;

class ExecutorServer {
 public:
  /// Binds and listens (std::runtime_error when it cannot). Clients must match `identity`.
  ExecutorServer(ServerOptions options, ExecutorIdentity identity, SessionExecutorFactory make);
  /// stop(), then waits for every session to end.
  ~ExecutorServer();
  ExecutorServer(const ExecutorServer&) = delete;
  ExecutorServer& operator=(const ExecutorServer&) = delete;

  std::uint16_t port() const;
  /// host:port it listens on.
  std::string address() const;
  /// Serves on the calling thread until stop(); returns once every session has ended.
  void run();
  /// run() on a thread of its own.
  void start();
  /// From any thread, any number of times; returns at once. Closes the listener and every
  /// session (a session in the middle of a step ends when the step returns, without replying).
  void stop();
  /// After start(): until run() has returned.
  void wait();
  /// stop() on SIGINT or SIGTERM; call before run().
  void stop_on_signals();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace inferscale::remote
