#pragma once
// @brief The remote executor's wire protocol: length-prefixed frames behind a versioned header,
// and explicit little-endian encodings of the handshake, BatchPlan and BatchResult. Decoding
// checks every length against the bytes left and never reads past the buffer.
//
// Frame: header (16 bytes) + payload (payload_bytes, at most kMaxFrameBytes).
//   u32 magic "ISEX" | u16 version | u16 type | u32 sequence | u32 payload_bytes
// A reply carries the sequence number of the frame it answers.

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "executor/executor.h"
#include "executor/model_config.h"
#include "executor/remote/endpoint.h"

namespace inferscale::remote {

inline constexpr std::uint32_t kMagic = 0x58455349;  // the bytes "ISEX"
// 2: prompt_tokens of per-request KV; 3: asynchronous loads
inline constexpr std::uint16_t kProtocolVersion = 3;
inline constexpr std::size_t kHeaderBytes = 16;
inline constexpr std::uint32_t kMaxFrameBytes = 64u << 20;  // payload limit, both directions
/// A hello's payload limit: client name and identity are well under a KiB; before the handshake
/// a server holds no more than this for a connection.
inline constexpr std::uint32_t kMaxHelloBytes = 16u << 10;

enum class MessageType : std::uint16_t {
  kHello = 1,    // client -> server: identity (model, GPU, pool capacity)
  kWelcome = 2,  // server -> client: accepted; the server's executor
  kExecute = 3,  // client -> server: a BatchPlan
  kResult = 4,   // server -> client: its BatchResult
  kError = 5,    // server -> client: why the session ends (the server then closes it)
};

enum class ErrorCode : std::uint32_t {
  kBadFrame = 1,        // bad magic, unknown version or type, oversized, truncated
  kBadMessage = 2,      // a payload that does not decode, or a message out of turn
  kMismatch = 3,        // handshake: the experiment and the server differ
  kExecutorFailed = 4,  // the server's executor threw
  kBusy = 5,            // too many sessions
  kTimeout = 6,         // the client stalled
};

const char* to_string(MessageType t);
const char* to_string(ErrorCode c);

/// Bytes that do not decode: bad header, truncated or corrupted payload.
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct FrameHeader {
  std::uint32_t magic = kMagic;
  std::uint16_t version = kProtocolVersion;
  std::uint16_t type = 0;
  std::uint32_t sequence = 0;
  std::uint32_t payload_bytes = 0;
};

/// `in`: [kHeaderBytes]. Reads the fields as they are; check_header() judges them.
FrameHeader decode_header(const std::uint8_t* in);
/// Throws ProtocolError naming the first bad field: magic, version, type, or a payload over
/// `max_payload_bytes` (checked before anything is allocated for it).
void check_header(const FrameHeader& h, std::uint32_t max_payload_bytes = kMaxFrameBytes);

/// Frames are built in place: start_frame() reserves the header, an encode_*() appends the
/// payload, seal_frame() writes the header (ProtocolError when the payload is over the limit).
void start_frame(std::vector<std::uint8_t>& frame);
void seal_frame(std::vector<std::uint8_t>& frame, MessageType type, std::uint32_t sequence);

/// What must match between an experiment and the server that runs its steps.
struct ExecutorIdentity {
  ModelConfig model;
  GpuConfig gpu;
  std::uint64_t pool_capacity_bytes = 0;  // the GPU store (fact pool) of one replica
};

/// "" when a server of identity `server` may run steps planned for `client`; otherwise the first
/// difference in words ("model mismatch: server llama-3.1-8b (32 layers, ...), client ...").
std::string identity_mismatch(const ExecutorIdentity& server, const ExecutorIdentity& client);

struct Hello {
  std::string client;  // program and version, for the server's log
  ExecutorIdentity identity;
};

struct Welcome {
  std::string executor;  // the server's executor (Executor::name())
  std::string server;    // program and version
};

struct ErrorMessage {
  ErrorCode code = ErrorCode::kBadMessage;
  std::string message;
};

void encode_hello(const Hello& m, std::vector<std::uint8_t>& out);
void encode_welcome(const Welcome& m, std::vector<std::uint8_t>& out);
void encode_error(const ErrorMessage& m, std::vector<std::uint8_t>& out);
void encode_plan(const BatchPlan& plan, std::vector<std::uint8_t>& out);
void encode_result(const BatchResult& result, std::vector<std::uint8_t>& out);

// Each decoder takes a whole payload; bytes left over are an error too.
Hello decode_hello(std::span<const std::uint8_t> payload);
Welcome decode_welcome(std::span<const std::uint8_t> payload);
ErrorMessage decode_error(std::span<const std::uint8_t> payload);
/// Also checks the plan's internal references (prefill fact ranges within prompt_facts), so a
/// server never indexes past them. Decodes into `plan` (reused: keeps its capacity).
void decode_plan(std::span<const std::uint8_t> payload, BatchPlan& plan);
BatchResult decode_result(std::span<const std::uint8_t> payload);

}  // namespace inferscale::remote
