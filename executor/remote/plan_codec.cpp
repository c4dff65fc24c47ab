// BatchPlan and BatchResult on the wire: every field, in declaration order.
#include "executor/remote/protocol.h"

#include <cstdint>
#include <string>
#include <vector>

#include "executor/remote/wire.h"

namespace inferscale::remote {

// Every field of these structs crosses the wire. A new field changes the size and stops the
// build here: encode it below (and bump kProtocolVersion), then update the size. (A field that
// fills padding does not: FactEncode and FactLoad gained prompt_tokens that way, version 2.)
static_assert(sizeof(PromptFact) == 24, "PromptFact changed: update encode_plan/decode_plan");
static_assert(sizeof(PrefillItem) == 64, "PrefillItem changed: update encode_plan/decode_plan");
static_assert(sizeof(DecodeItem) == 16, "DecodeItem changed: update encode_plan/decode_plan");
static_assert(sizeof(FactEncode) == 48, "FactEncode changed: update encode_plan/decode_plan");
static_assert(sizeof(FactLoad) == 40, "FactLoad changed: update encode_plan/decode_plan");
static_assert(sizeof(BatchPlan) == 16 + 11 * sizeof(std::vector<int>),
              "BatchPlan changed: update encode_plan/decode_plan");
static_assert(sizeof(PhaseTimes) == 6 * sizeof(SimTime),
              "PhaseTimes changed: update encode_result/decode_result");
static_assert(sizeof(BatchResult) == 7 * sizeof(SimTime) + sizeof(std::vector<int>),
              "BatchResult changed: update encode_result/decode_result");

namespace {

using wire::Reader;
using wire::Writer;

// Bytes of each item on the wire (the decoder checks counts against these before allocating).
constexpr std::size_t kEncodeBytes = 8 + 8 + 4 + 4 + 1 + 8 + 4 + 4;
constexpr std::size_t kLoadBytes = 8 + 4 + 8 + 8 + 4 + 4;
constexpr std::size_t kPromptFactBytes = 8 + 4 + 4 + 1 + 1;
constexpr std::size_t kPrefillBytes = 8 + 8 + 10 * 4 + 3;
constexpr std::size_t kDecodeBytes = 8 + 4;
constexpr std::size_t kIdBytes = 8;

void put_load(Writer& w, const FactLoad& l) {
  w.u64(l.fact);
  w.u32(l.tokens);
  w.u64(l.bytes);
  w.u64(l.for_request);
  w.u32(l.position);
  w.u32(l.prompt_tokens);
}

FactLoad get_load(Reader& r) {
  FactLoad l;
  l.fact = r.u64("load.fact");
  l.tokens = r.u32("load.tokens");
  l.bytes = r.u64("load.bytes");
  l.for_request = r.u64("load.for_request");
  l.position = r.u32("load.position");
  l.prompt_tokens = r.u32("load.prompt_tokens");
  return l;
}

void put_ids(Writer& w, const std::vector<std::uint64_t>& ids) {
  w.count(ids.size());
  for (auto id : ids) w.u64(id);
}

void get_ids(Reader& r, const char* field, std::vector<std::uint64_t>& ids) {
  const std::size_t n = r.count(field, kIdBytes);
  ids.resize(n);
  for (auto& id : ids) id = r.u64(field);
}

}  // namespace

void encode_plan(const BatchPlan& p, std::vector<std::uint8_t>& out) {
  Writer w(out);
  w.i32(p.replica);
  w.i64(p.now);
  w.count(p.encodes.size());
  for (const auto& e : p.encodes) {
    w.u64(e.fact);
    w.u64(e.user);
    w.u32(e.tokens);
    w.u32(e.context_tokens);
    w.flag(e.store);
    w.u64(e.for_request);
    w.u32(e.position);
    w.u32(e.prompt_tokens);
  }
  w.count(p.loads.size());
  for (const auto& l : p.loads) put_load(w, l);
  w.count(p.async_loads.size());
  for (const auto& l : p.async_loads) put_load(w, l);
  w.count(p.offloads.size());
  for (const auto& l : p.offloads) put_load(w, l);
  w.count(p.async_offloads.size());
  for (const auto& l : p.async_offloads) put_load(w, l);
  put_ids(w, p.evictions);
  put_ids(w, p.host_evictions);
  w.count(p.prompt_facts.size());
  for (const auto& f : p.prompt_facts) {
    w.u64(f.fact);
    w.u32(f.tokens);
    w.u32(f.position);
    w.flag(f.inject);
    w.flag(f.private_kv);
  }
  w.count(p.prefills.size());
  for (const auto& q : p.prefills) {
    w.u64(q.request);
    w.u64(q.user);
    for (std::uint32_t v :
         {q.header_tokens, q.footer_tokens, q.query_tokens, q.facts_begin, q.facts_end,
          q.prompt_tokens, q.computed_total, q.computed_done, q.computed_now, q.present_tokens}) {
      w.u32(v);
    }
    w.flag(q.header_cached);
    w.flag(q.first_chunk);
    w.flag(q.last_chunk);
  }
  w.count(p.decodes.size());
  for (const auto& d : p.decodes) {
    w.u64(d.request);
    w.u32(d.context_tokens);
  }
  put_ids(w, p.released);
}

void decode_plan(std::span<const std::uint8_t> payload, BatchPlan& p) {
  Reader r(payload, "plan");
  p.clear();
  p.replica = r.i32("replica");
  p.now = r.i64("now");
  p.encodes.resize(r.count("encodes", kEncodeBytes));
  for (auto& e : p.encodes) {
    e.fact = r.u64("encode.fact");
    e.user = r.u64("encode.user");
    e.tokens = r.u32("encode.tokens");
    e.context_tokens = r.u32("encode.context_tokens");
    e.store = r.flag("encode.store");
    e.for_request = r.u64("encode.for_request");
    e.position = r.u32("encode.position");
    e.prompt_tokens = r.u32("encode.prompt_tokens");
  }
  p.loads.resize(r.count("loads", kLoadBytes));
  for (auto& l : p.loads) l = get_load(r);
  p.async_loads.resize(r.count("async_loads", kLoadBytes));
  for (auto& l : p.async_loads) l = get_load(r);
  p.offloads.resize(r.count("offloads", kLoadBytes));
  for (auto& l : p.offloads) l = get_load(r);
  p.async_offloads.resize(r.count("async_offloads", kLoadBytes));
  for (auto& l : p.async_offloads) l = get_load(r);
  get_ids(r, "evictions", p.evictions);
  get_ids(r, "host_evictions", p.host_evictions);
  p.prompt_facts.resize(r.count("prompt_facts", kPromptFactBytes));
  for (auto& f : p.prompt_facts) {
    f.fact = r.u64("prompt_fact.fact");
    f.tokens = r.u32("prompt_fact.tokens");
    f.position = r.u32("prompt_fact.position");
    f.inject = r.flag("prompt_fact.inject");
    f.private_kv = r.flag("prompt_fact.private_kv");
  }
  p.prefills.resize(r.count("prefills", kPrefillBytes));
  for (auto& q : p.prefills) {
    q.request = r.u64("prefill.request");
    q.user = r.u64("prefill.user");
    q.header_tokens = r.u32("prefill.header_tokens");
    q.footer_tokens = r.u32("prefill.footer_tokens");
    q.query_tokens = r.u32("prefill.query_tokens");
    q.facts_begin = r.u32("prefill.facts_begin");
    q.facts_end = r.u32("prefill.facts_end");
    q.prompt_tokens = r.u32("prefill.prompt_tokens");
    q.computed_total = r.u32("prefill.computed_total");
    q.computed_done = r.u32("prefill.computed_done");
    q.computed_now = r.u32("prefill.computed_now");
    q.present_tokens = r.u32("prefill.present_tokens");
    q.header_cached = r.flag("prefill.header_cached");
    q.first_chunk = r.flag("prefill.first_chunk");
    q.last_chunk = r.flag("prefill.last_chunk");
    if (q.facts_begin > q.facts_end || q.facts_end > p.prompt_facts.size()) {
      throw ProtocolError("plan: prefill of request " + std::to_string(q.request) +
                          " refers to prompt facts [" + std::to_string(q.facts_begin) + ", " +
                          std::to_string(q.facts_end) + ") of " +
                          std::to_string(p.prompt_facts.size()));
    }
  }
  p.decodes.resize(r.count("decodes", kDecodeBytes));
  for (auto& d : p.decodes) {
    d.request = r.u64("decode.request");
    d.context_tokens = r.u32("decode.context_tokens");
  }
  get_ids(r, "released", p.released);
  r.finish();
}

void encode_result(const BatchResult& res, std::vector<std::uint8_t>& out) {
  Writer w(out);
  w.i64(res.duration_ns);
  const PhaseTimes& t = res.phases;
  for (SimTime v :
       {t.encode_ns, t.load_ns, t.inject_ns, t.prefill_ns, t.decode_ns, t.overhead_ns}) {
    w.i64(v);
  }
  w.count(res.tokens.size());
  for (auto tok : res.tokens) w.i32(tok);
}

BatchResult decode_result(std::span<const std::uint8_t> payload) {
  Reader r(payload, "result");
  BatchResult res;
  res.duration_ns = r.i64("duration_ns");
  res.phases.encode_ns = r.i64("phases.encode_ns");
  res.phases.load_ns = r.i64("phases.load_ns");
  res.phases.inject_ns = r.i64("phases.inject_ns");
  res.phases.prefill_ns = r.i64("phases.prefill_ns");
  res.phases.decode_ns = r.i64("phases.decode_ns");
  res.phases.overhead_ns = r.i64("phases.overhead_ns");
  res.tokens.resize(r.count("tokens", 4));
  for (auto& tok : res.tokens) tok = r.i32("tokens");
  r.finish();
  return res;
}

}  // namespace inferscale::remote
