#pragma once
// @brief RemoteExecutor: runs each step on an executor server over TCP (executor/remote/
// server.h). Connects and handshakes on construction; any failure afterwards (connection lost,
// server error, no answer in time) throws ExecutorFailure "host:port: what happened".

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "executor/executor.h"
#include "executor/remote/protocol.h"

namespace inferscale::remote {

class FrameChannel;

struct RemoteOptions {
  std::string endpoint;           // HOST:PORT
  double connect_timeout_s = 10;  // TCP connect
  double timeout_s = 60;          // the handshake's answer, and each step's result
};

class RemoteExecutor final : public Executor {
 public:
  /// Throws ExecutorFailure when the endpoint is malformed or unreachable, or the server refuses
  /// the identity (its message says what differs).
  RemoteExecutor(RemoteOptions options, const ExecutorIdentity& identity);
  ~RemoteExecutor() override;

  BatchResult execute(const BatchPlan& plan) override;
  /// "remote:<server's executor>@host:port".
  std::string name() const override;
  const std::string& endpoint() const { return options_.endpoint; }

 private:
  [[noreturn]] void fail(const std::string& what);
  /// The next frame answering `sequence`; a server Error becomes a failure with its message.
  FrameHeader receive(std::uint32_t sequence, MessageType expected, const char* waiting_for);

  RemoteOptions options_;
  std::unique_ptr<FrameChannel> channel_;
  std::string server_executor_;
  std::string failure_;  // set once the connection is unusable: every later call fails with it
  std::uint32_t sequence_ = 0;
  std::vector<std::uint8_t> frame_, payload_;
};

}  // namespace inferscale::remote
