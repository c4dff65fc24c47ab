// Writes the protocol fuzz target's seed inputs to a folder: each message kind encoded from a
// small sample (a selector byte, then the payload; 0: a frame header).
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "executor/remote/protocol.h"

using namespace inferscale;
using namespace inferscale::remote;

namespace {

void put(const std::string& dir, const std::string& name, std::uint8_t selector,
         const std::vector<std::uint8_t>& payload) {
  const std::string path = dir + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    std::perror(path.c_str());
    std::exit(1);
  }
  std::fputc(selector, f);
  std::fwrite(payload.data(), 1, payload.size(), f);
  std::fclose(f);
}

BatchPlan sample_plan(bool large) {
  BatchPlan p;
  p.replica = 1;
  p.now = 123456789;
  p.encodes.push_back(FactEncode{7, 3, 25, 40, true});
  p.loads.push_back(FactLoad{8, 16, 16 * 64, kNoRequest, 0});
  p.offloads.push_back(FactLoad{9, 12, 12 * 64, kNoRequest, 0});
  p.evictions = {9};
  const std::uint32_t facts = large ? 12 : 4;
  for (std::uint32_t i = 0; i < facts; ++i) {
    p.prompt_facts.push_back(PromptFact{100 + i, 10 + i, 16 + 20 * i, i != 2, false});
  }
  PrefillItem q;
  q.request = 42;
  q.user = 3;
  q.header_tokens = 16;
  q.footer_tokens = 4;
  q.query_tokens = 12;
  q.facts_begin = 0;
  q.facts_end = facts;
  q.prompt_tokens = 120;
  q.computed_total = 30;
  q.computed_now = 30;
  q.present_tokens = 90;
  q.first_chunk = q.last_chunk = true;
  p.prefills.push_back(q);
  p.decodes.push_back(DecodeItem{41, 250});
  p.released = {40};
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FOLDER\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  std::vector<std::uint8_t> frame;
  start_frame(frame);
  encode_welcome(Welcome{"cost_model", "inferscale"}, frame);
  seal_frame(frame, MessageType::kWelcome, 7);
  put(dir, "header", 0, frame);

  ExecutorIdentity id;
  id.model.name = "llama-3.1-8b";
  id.gpu.name = "h200";
  id.pool_capacity_bytes = 1u << 30;
  std::vector<std::uint8_t> b;
  encode_hello(Hello{"inferscale 0.1.0", id}, b);
  put(dir, "hello", 1, b);
  b.clear();
  encode_welcome(Welcome{"cost_model", "inferscale 0.1.0"}, b);
  put(dir, "welcome", 2, b);
  b.clear();
  encode_error(ErrorMessage{ErrorCode::kBusy, "the server is busy"}, b);
  put(dir, "error", 3, b);
  for (const bool large : {false, true}) {
    b.clear();
    encode_plan(sample_plan(large), b);
    put(dir, large ? "plan_large" : "plan", 4, b);
  }
  BatchResult r;
  r.duration_ns = 1234567;
  r.phases.prefill_ns = 1000000;
  r.phases.decode_ns = 234567;
  r.tokens = {1, 2, 3};
  b.clear();
  encode_result(r, b);
  put(dir, "result", 5, b);
  return 0;
}
