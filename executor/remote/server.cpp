#include "executor/remote/server.h"

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "executor/remote/channel.h"

namespace inferscale::remote {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

struct Session {
  std::uint64_t id = 0;
  std::string tag;  // "session <id> (<peer>)", for the log
  FrameChannel channel;
  std::thread thread;
  std::atomic<bool> done{false};
};

/// Ends a session with an error reply to the frame `sequence`.
struct SessionEnd {
  ErrorCode code;
  std::string message;
  std::uint32_t sequence;
};

/// `line` with its control characters (and DEL) as \xNN: client-sent strings reach the log, and
/// a newline or an escape sequence in them must not forge or hide a line.
std::string escape_controls(const std::string& line) {
  std::string out;
  out.reserve(line.size());
  for (const char c : line) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

std::string gib(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f GiB", double(bytes) / double(1ull << 30));
  return buf;
}

}  // namespace

struct ExecutorServer::Impl {
  ServerOptions options;
  ExecutorIdentity identity;
  SessionExecutorFactory make;
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::optional<asio::signal_set> signals;
  std::atomic<bool> stopping{false};
  std::atomic<unsigned> active{0};
  std::mutex mu;  // sessions, next_id
  std::vector<std::shared_ptr<Session>> sessions;
  std::uint64_t next_id = 0;
  std::mutex log_mu;
  std::thread runner;
  tcp::endpoint bound;  // kept: port() and address() stay valid after stop()

  void log(const std::string& raw) {
    const std::string line = escape_controls(raw);
    std::lock_guard<std::mutex> lock(log_mu);
    if (options.log) {
      options.log(line);
    } else {
      std::fprintf(stderr, "serve-executor: %s\n", line.c_str());
      std::fflush(stderr);
    }
  }

  /// Joins the threads of ended sessions; `mu` held.
  void reap() {
    auto it = sessions.begin();
    while (it != sessions.end()) {
      Session& s = **it;
      if (s.done) {
        if (s.thread.joinable()) s.thread.join();
        it = sessions.erase(it);
      } else {
        ++it;
      }
    }
  }

  void accept_next() {
    auto session = std::make_shared<Session>();
    acceptor.async_accept(session->channel.socket(), [this, session](const error_code& ec) {
      if (ec) {
        if (ec == asio::error::operation_aborted || stopping) return;
        log(std::string("accept failed: ") + ec.message());
        accept_next();
        return;
      }
      std::lock_guard<std::mutex> lock(mu);
      if (stopping) return;  // the session's socket closes with it
      reap();
      session->id = ++next_id;
      sessions.push_back(session);
      session->thread = std::thread([this, session] {
        serve(*session);
        session->done = true;
      });
      accept_next();
    });
  }

  void send(Session& s, MessageType type, std::uint32_t sequence,
            const std::function<void(std::vector<std::uint8_t>&)>& encode) {
    std::vector<std::uint8_t> frame;
    start_frame(frame);
    encode(frame);
    seal_frame(frame, type, sequence);
    s.channel.write(frame, options.frame_timeout_s);
  }

  void serve(Session& s) {
    s.tag = "session " + std::to_string(s.id) + " (" + s.channel.peer() + ")";
    log(s.tag + ": connected");
    std::uint64_t steps = 0;
    bool counted = false;  // holds a session slot (from its handshake on)
    const std::string end = serve_until_end(s, steps, counted);
    s.channel.close();
    if (counted) --active;
    // Logged once the session is over (tests wait for this line).
    log(s.tag + ": " + end + " after " + std::to_string(steps) + " steps");
  }

  /// Serves a session's frames; returns how it ended, in words.
  std::string serve_until_end(Session& s, std::uint64_t& steps, bool& counted) {
    try {
      serve_frames(s, steps, counted);
    } catch (const SessionEnd& e) {
      if (!stopping) {
        try {
          send(s, MessageType::kError, e.sequence, [&e](std::vector<std::uint8_t>& out) {
            encode_error(ErrorMessage{e.code, e.message}, out);
          });
          s.channel.close_gracefully(1.0);
        } catch (const std::exception&) {
          // The client is gone or not reading: nothing more to tell it.
        }
      }
      return std::string("closed (") + to_string(e.code) + "): " + e.message;
    } catch (const ChannelError& e) {
      if (stopping) return "closed: the server is stopping";
      if (e.kind() == ChannelError::kClosed) return "client disconnected";
      return std::string("connection lost: ") + e.what();
    } catch (const std::exception& e) {
      return std::string("closed on an internal error: ") + e.what();
    }
    return "closed";
  }

  void serve_frames(Session& s, std::uint64_t& steps, bool& counted) {
    // The hello: small, and whole within the handshake deadline. A connection still in its
    // handshake holds no session slot, so silent connections cannot make the server busy.
    std::vector<std::uint8_t> payload;
    FrameHeader h = read(s, payload, options.handshake_timeout_s,
                         std::min(options.handshake_timeout_s, options.frame_timeout_s),
                         std::min(kMaxHelloBytes, options.max_frame_bytes));
    if (h.type != static_cast<std::uint16_t>(MessageType::kHello)) {
      throw SessionEnd{ErrorCode::kBadMessage,
                       std::string("expected a hello message first, got ") +
                           to_string(static_cast<MessageType>(h.type)),
                       h.sequence};
    }
    Hello hello;
    try {
      hello = decode_hello(payload);
    } catch (const ProtocolError& e) {
      throw SessionEnd{ErrorCode::kBadMessage, e.what(), h.sequence};
    }
    const std::string mismatch = identity_mismatch(identity, hello.identity);
    if (!mismatch.empty()) throw SessionEnd{ErrorCode::kMismatch, mismatch, h.sequence};
    if (active.fetch_add(1) >= options.max_sessions) {
      --active;
      throw SessionEnd{ErrorCode::kBusy,
                       "the server is busy (" + std::to_string(options.max_sessions) +
                           " sessions open; see --max-sessions)",
                       h.sequence};
    }
    counted = true;
    std::unique_ptr<Executor> executor;
    try {
      executor = make();
    } catch (const std::exception& e) {
      throw SessionEnd{ErrorCode::kExecutorFailed,
                       std::string("cannot create the executor: ") + e.what(), h.sequence};
    }
    const Welcome welcome{executor->name(), "inferscale " INFERSCALE_VERSION};
    send(s, MessageType::kWelcome, h.sequence,
         [&welcome](std::vector<std::uint8_t>& out) { encode_welcome(welcome, out); });
    log(s.tag + ": handshake ok (" + hello.client + "; " + identity.model.name + " on " +
        identity.gpu.name + ", pool " + gib(identity.pool_capacity_bytes) + "; executor " +
        executor->name() + ")");

    BatchPlan plan;
    while (true) {
      h = read(s, payload, options.idle_timeout_s);
      if (h.type != static_cast<std::uint16_t>(MessageType::kExecute)) {
        throw SessionEnd{ErrorCode::kBadMessage,
                         std::string("unexpected ") + to_string(static_cast<MessageType>(h.type)) +
                             " message (expected execute)",
                         h.sequence};
      }
      try {
        decode_plan(payload, plan);
      } catch (const ProtocolError& e) {
        throw SessionEnd{ErrorCode::kBadMessage, e.what(), h.sequence};
      }
      BatchResult result;
      try {
        result = executor->execute(plan);
      } catch (const std::exception& e) {
        throw SessionEnd{ErrorCode::kExecutorFailed,
                         "step " + std::to_string(steps + 1) + " failed: " + e.what(), h.sequence};
      }
      if (stopping) throw ChannelError(ChannelError::kClosed, "stopping");
      send(s, MessageType::kResult, h.sequence,
           [&result](std::vector<std::uint8_t>& out) { encode_result(result, out); });
      ++steps;
    }
  }

  /// Reads one frame; a bad or stalled frame ends the session with an error reply.
  FrameHeader read(Session& s, std::vector<std::uint8_t>& payload, double idle_timeout_s) {
    return read(s, payload, idle_timeout_s, options.frame_timeout_s, options.max_frame_bytes);
  }
  FrameHeader read(Session& s, std::vector<std::uint8_t>& payload, double idle_timeout_s,
                   double frame_timeout_s, std::uint32_t max_payload_bytes) {
    try {
      return s.channel.read(payload, idle_timeout_s, frame_timeout_s, max_payload_bytes);
    } catch (const ChannelError& e) {
      if (stopping) throw;
      if (e.kind() == ChannelError::kProtocol) throw SessionEnd{ErrorCode::kBadFrame, e.what(), 0};
      if (e.kind() == ChannelError::kTimeout) throw SessionEnd{ErrorCode::kTimeout, e.what(), 0};
      throw;
    }
  }
};

ExecutorServer::ExecutorServer(ServerOptions options, ExecutorIdentity identity,
                               SessionExecutorFactory make)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->identity = std::move(identity);
  impl_->make = std::move(make);
  const ServerOptions& o = impl_->options;
  const std::string where = Endpoint{o.host, o.port}.text();
  error_code ec;
  tcp::resolver resolver(impl_->io);
  const auto results = resolver.resolve(o.host, std::to_string(o.port), tcp::resolver::passive, ec);
  if (ec || results.empty()) {
    throw std::runtime_error("cannot listen on " + where + ": " +
                             (ec ? ec.message() : std::string("no address")));
  }
  const tcp::endpoint endpoint = results.begin()->endpoint();
  tcp::acceptor& a = impl_->acceptor;
  a.open(endpoint.protocol(), ec);
  if (!ec) a.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) a.bind(endpoint, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (!ec) impl_->bound = a.local_endpoint(ec);
  if (ec) throw std::runtime_error("cannot listen on " + where + ": " + ec.message());
}

ExecutorServer::~ExecutorServer() {
  stop();
  wait();
}

std::uint16_t ExecutorServer::port() const {
  return impl_->bound.port();
}

std::string ExecutorServer::address() const {
  return Endpoint{impl_->bound.address().to_string(), impl_->bound.port()}.text();
}

void ExecutorServer::run() {
  Impl& m = *impl_;
  m.log("listening on " + address() + " (" + m.identity.model.name + " on " + m.identity.gpu.name +
        ", protocol " + std::to_string(kProtocolVersion) + ")");
  m.accept_next();
  m.io.run();  // until stop() closes the listener (and cancels the signal wait)
  std::vector<std::shared_ptr<Session>> ended;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    ended.swap(m.sessions);
  }
  // Joined without the lock: a session may be inside a step that waits on whoever called stop().
  for (auto& s : ended) {
    if (s->thread.joinable()) s->thread.join();
  }
  m.log("stopped");
}

void ExecutorServer::start() {
  impl_->runner = std::thread([this] { run(); });
}

void ExecutorServer::stop() {
  Impl& m = *impl_;
  {
    // Sessions first: once `stopping` is set under the lock no session is added, and run()
    // collects them only after the listener below has closed.
    std::lock_guard<std::mutex> lock(m.mu);
    m.stopping = true;
    for (auto& s : m.sessions) {
      if (!s->done) s->channel.abort_from_other_thread();
    }
  }
  asio::post(m.io, [&m] {
    error_code ignored;
    m.acceptor.close(ignored);
    if (m.signals) m.signals->cancel(ignored);
  });
}

void ExecutorServer::wait() {
  if (impl_->runner.joinable()) impl_->runner.join();
}

void ExecutorServer::stop_on_signals() {
  Impl& m = *impl_;
  m.signals.emplace(m.io, SIGINT, SIGTERM);
  m.signals->async_wait([this](const error_code& ec, int) {
    if (!ec) {
      impl_->log("signal received: stopping");
      stop();
    }
  });
}

}  // namespace inferscale::remote
