// The executor protocol's decoders: the first byte picks a decoder, the rest is its payload (or,
// for 0, a frame header). ProtocolError is the expected outcome for bad bytes; a decoded message
// must encode and decode again to the same bytes.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "executor/remote/protocol.h"

using namespace inferscale::remote;

namespace {

template <class Decode, class Encode>
void round_trip(std::span<const std::uint8_t> in, Decode decode, Encode encode) {
  auto m = decode(in);
  std::vector<std::uint8_t> out;
  encode(m, out);
  std::vector<std::uint8_t> again;
  encode(decode(std::span<const std::uint8_t>(out)), again);
  if (out != again) std::abort();  // an encoding that does not survive its own decoder
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::span<const std::uint8_t> payload(data + 1, size - 1);
  try {
    switch (data[0] % 6) {
      case 0:
        if (payload.size() >= kHeaderBytes) check_header(decode_header(payload.data()));
        break;
      case 1:
        round_trip(
            payload, [](auto p) { return decode_hello(p); },
            [](const Hello& m, std::vector<std::uint8_t>& o) { encode_hello(m, o); });
        break;
      case 2:
        round_trip(
            payload, [](auto p) { return decode_welcome(p); },
            [](const Welcome& m, std::vector<std::uint8_t>& o) { encode_welcome(m, o); });
        break;
      case 3:
        round_trip(
            payload, [](auto p) { return decode_error(p); },
            [](const ErrorMessage& m, std::vector<std::uint8_t>& o) { encode_error(m, o); });
        break;
      case 4:
        round_trip(
            payload,
            [](auto p) {
              inferscale::BatchPlan plan;
              decode_plan(p, plan);
              return plan;
            },
            [](const inferscale::BatchPlan& m, std::vector<std::uint8_t>& o) {
              encode_plan(m, o);
            });
        break;
      default:
        round_trip(
            payload, [](auto p) { return decode_result(p); },
            [](const inferscale::BatchResult& m, std::vector<std::uint8_t>& o) {
              encode_result(m, o);
            });
    }
  } catch (const ProtocolError&) {
  }
  return 0;
}
