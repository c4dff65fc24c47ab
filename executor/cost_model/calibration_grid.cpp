#include "executor/cost_model/calibration_grid.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

namespace inferscale {

namespace {

// Step limits of the grid: a scheduler token budget (prefill + decode), KV of the decoders and
// of continuation chunks, and one encode forward.
constexpr std::uint64_t kMaxStepTokens = 8192;
// Fact encodes per step in a point's set-up (its facts to move); more go in further steps.
constexpr std::uint32_t kMaxEncodeFacts = 2048;
constexpr std::uint64_t kMaxDecodeKvTokens = 589824;  // 72 GiB of Llama-3.1-8B KV
constexpr std::uint64_t kMaxChunkKvTokens = 65536;
constexpr std::uint64_t kMaxEncodeTokens = 16384;

std::uint32_t decoder_prompt(const CalibrationShape& s, std::uint32_t chunks) {
  return s.header_tokens + chunks * s.chunk_tokens + s.query_tokens;
}

/// One axis of a family of points: a field of the point and its values.
struct Axis {
  std::uint32_t CalibrationPoint::*field;
  std::vector<std::uint32_t> values;
};
using P = CalibrationPoint;

bool within_limits(const CalibrationPoint& p, const CalibrationShape& s) {
  const std::uint64_t forward = std::uint64_t(p.prefill_batch) * p.prefill_tokens + p.decode_batch;
  const std::uint64_t decode_kv =
      std::uint64_t(p.decode_batch) * decoder_prompt(s, p.decode_chunks);
  const std::uint64_t chunk_kv = std::uint64_t(p.prefill_batch) * p.prefill_chunks * s.chunk_tokens;
  const std::uint64_t encode = std::uint64_t(p.encodes) * (p.encode_tokens + p.encode_context);
  return forward <= kMaxStepTokens && decode_kv <= kMaxDecodeKvTokens &&
         chunk_kv <= kMaxChunkKvTokens && encode <= kMaxEncodeTokens;
}

/// Every combination of the axes' values (the first axis varies slowest) within the limits.
void add_family(std::vector<CalibrationPoint>& out, const CalibrationShape& s,
                const std::vector<Axis>& axes, std::size_t axis = 0, CalibrationPoint p = {}) {
  if (axis == axes.size()) {
    if (within_limits(p, s)) out.push_back(p);
    return;
  }
  for (std::uint32_t v : axes[axis].values) {
    p.*axes[axis].field = v;
    add_family(out, s, axes, axis + 1, p);
  }
}

CalibrationGrid small_grid() {
  CalibrationGrid g;
  g.name = "small";
  auto& s = g.shape;
  auto& v = g.points;
  add_family(
      v, s,
      {{&P::prefill_batch, {1, 8, 64}}, {&P::prefill_tokens, {16, 256, 2048}}, {&P::k, {0, 50}}});
  add_family(v, s,
             {{&P::prefill_batch, {1, 8}},
              {&P::prefill_tokens, {64, 1024}},
              {&P::prefill_chunks, {4, 16}}});
  add_family(v, s, {{&P::decode_batch, {1, 16, 128}}, {&P::decode_chunks, {0, 4, 16}}});
  add_family(v, s,
             {{&P::decode_batch, {16, 128}},
              {&P::decode_chunks, {4}},
              {&P::prefill_batch, {1, 4}},
              {&P::prefill_tokens, {256}},
              {&P::k, {0, 50}}});
  add_family(v, s,
             {{&P::encodes, {1, 16}}, {&P::encode_tokens, {24}}, {&P::encode_context, {0, 512}}});
  add_family(v, s,
             {{&P::decode_batch, {32}},
              {&P::decode_chunks, {4}},
              {&P::encodes, {8}},
              {&P::encode_tokens, {24}},
              {&P::encode_context, {0, 128}}});
  add_family(v, s, {{&P::loads, {1, 32}}, {&P::move_tokens, {24, 256}}});
  add_family(v, s, {{&P::offloads, {1, 32}}, {&P::move_tokens, {24, 256}}});
  add_family(v, s,
             {{&P::decode_batch, {32}},
              {&P::decode_chunks, {4}},
              {&P::loads, {16}},
              {&P::move_tokens, {24}}});
  return g;
}

CalibrationGrid full_grid() {
  CalibrationGrid g;
  g.name = "full";
  auto& s = g.shape;
  auto& v = g.points;
  // Prefill alone (first chunks): batch x tokens x k.
  add_family(v, s,
             {{&P::prefill_batch, {1, 2, 4, 8, 16, 32, 64}},
              {&P::prefill_tokens, {16, 64, 256, 1024, 4096}},
              {&P::k, {0, 10, 50}}});
  // Continuation chunks after present context.
  add_family(v, s,
             {{&P::prefill_batch, {1, 4, 16}},
              {&P::prefill_tokens, {64, 512, 2048}},
              {&P::prefill_chunks, {2, 8, 16}}});
  // Decode alone: batch x context.
  add_family(v, s,
             {{&P::decode_batch, {1, 2, 4, 8, 16, 32, 64, 128, 256, 512}},
              {&P::decode_chunks, {0, 1, 4, 8, 16}}});
  // Continuous batching: decodes with new prefills.
  add_family(v, s,
             {{&P::decode_batch, {8, 64, 128, 256}},
              {&P::decode_chunks, {1, 8}},
              {&P::prefill_batch, {1, 4}},
              {&P::prefill_tokens, {64, 512}},
              {&P::k, {0, 50}}});
  // Fact encodes (CWE context), alone and beside decodes and prefills.
  add_family(v, s,
             {{&P::encodes, {1, 4, 16, 64}},
              {&P::encode_tokens, {16, 48}},
              {&P::encode_context, {0, 128, 512}}});
  add_family(v, s,
             {{&P::decode_batch, {16, 64}},
              {&P::decode_chunks, {4}},
              {&P::encodes, {4, 16}},
              {&P::encode_tokens, {24}},
              {&P::encode_context, {0, 128}}});
  add_family(v, s,
             {{&P::prefill_batch, {4}},
              {&P::prefill_tokens, {256}},
              {&P::k, {10}},
              {&P::encodes, {4, 16}},
              {&P::encode_tokens, {24}},
              {&P::encode_context, {0, 128}}});
  // Host tier: loads and offloads, alone and beside decodes and prefills.
  add_family(v, s, {{&P::loads, {1, 8, 32, 128}}, {&P::move_tokens, {24, 256}}});
  add_family(v, s, {{&P::offloads, {1, 8, 32, 128}}, {&P::move_tokens, {24, 256}}});
  add_family(v, s,
             {{&P::decode_batch, {64}},
              {&P::decode_chunks, {4}},
              {&P::loads, {8, 64}},
              {&P::move_tokens, {24}}});
  add_family(v, s,
             {{&P::prefill_batch, {4}},
              {&P::prefill_tokens, {256}},
              {&P::k, {10}},
              {&P::loads, {8, 64}},
              {&P::move_tokens, {24}}});
  return g;
}

/// The full grid, then continuous-batching steps shaped like the headline experiment's first
/// waves: 16 or 32 query-only prefills injecting k = 50 facts beside 64 or 128 decodes over
/// 1,536 context tokens (the full grid's mixed steps have at most 4 prefills). Its first points
/// are the full grid's, in the same order.
CalibrationGrid full_mixed_grid() {
  CalibrationGrid g = full_grid();
  g.name = "full_mixed";
  add_family(g.points, g.shape,
             {{&P::decode_batch, {64, 128}},
              {&P::decode_chunks, {6}},
              {&P::prefill_batch, {16, 32}},
              {&P::prefill_tokens, {32}},
              {&P::k, {50}}});
  return g;
}

/// Asynchronous loads of 64-4,096 facts of 13-256 tokens, alone, beside decode steps and beside
/// asynchronous offloads, each sample ending with a one-request prefill that injects the last
/// load: what the copy lanes deliver, for `inferscale calibrate --copy-lanes`
/// (calibration_copy_lanes.h), not for the step fit.
CalibrationGrid copy_lanes_grid() {
  CalibrationGrid g;
  g.name = "copy_lanes";
  add_family(g.points, g.shape, {{&P::async_loads, {64, 256, 1024}}, {&P::move_tokens, {24}}});
  add_family(g.points, g.shape, {{&P::async_loads, {16, 64, 256}}, {&P::move_tokens, {256}}});
  // LoCoMo's facts (19 tokens on average): a part of one 16-token block (13), a whole block and
  // one token of the next (17), a whole block and four tokens (20). A part of a block moves as
  // one strided copy of a row per layer's K and V.
  add_family(g.points, g.shape, {{&P::async_loads, {1024}}, {&P::move_tokens, {13, 17, 20}}});
  // The lanes beside compute: loads issued with the first of four decode steps of 64 or 128
  // requests over 1,616-token contexts (the headline's waves), injected in the fifth.
  add_family(g.points, g.shape,
             {{&P::decode_batch, {64, 128}},
              {&P::decode_chunks, {6}},
              {&P::async_loads, {256, 1024}},
              {&P::move_tokens, {24}},
              {&P::async_steps, {4}}});
  // Asynchronous loads beside asynchronous offloads (of the step's victims or not).
  auto both = [](std::uint32_t loads, std::uint32_t offloads, std::uint32_t tokens, bool victims) {
    P p;
    p.async_loads = loads;
    p.async_offloads = offloads;
    p.move_tokens = tokens;
    p.offload_victims = victims;
    return p;
  };
  // Both lanes at once: as many facts offloaded as loaded, in the same step (the duplex).
  for (const auto& [n, tokens] : {std::pair{256u, 24u}, {1024u, 24u}, {64u, 256u}}) {
    g.points.push_back(both(n, n, tokens, false));
  }
  // The offloads of the step's victims, whose blocks the loads take (a full pool, as in a
  // serving run's first wave): each load waits for the offload that frees its blocks.
  for (const auto& [n, tokens] : {std::pair{256u, 24u}, {1024u, 24u}, {1024u, 17u}}) {
    g.points.push_back(both(n, n, tokens, true));
  }
  // What a serving run's first wave does, in parts: a quarter as many offloads as loads (the
  // offload lane done early, the loads alone after: how much of the duplex is the offloads'),
  // both lanes' copies of victims issued beside the first of four decode passes, and a wave's
  // size (200 users move some 8,000 facts each way, 17 tokens on average).
  g.points.push_back(both(1024, 256, 24, false));
  P beside = both(1024, 1024, 17, true);
  beside.decode_batch = 64;
  beside.decode_chunks = 6;
  beside.async_steps = 4;
  g.points.push_back(beside);
  g.points.push_back(both(4096, 4096, 17, true));
  // Compute-bound passes beside the lanes (a first wave's first step: its prefills need none of
  // its copies, which go beside the pass): prefills of 32 tokens injecting k = 50 resident facts
  // with loads and victims' offloads of 17 tokens issued beside them, then the step that injects
  // the last load; 64 or 128 prefills beside 256 of each, and 96 beside 512 of each (a 100-user
  // first step: 88 prefills beside 538 loads and 476 offloads).
  auto prefills = [&](std::uint32_t batch, std::uint32_t copies) {
    P p = both(copies, copies, 17, true);
    p.prefill_batch = batch;
    p.prefill_tokens = 32;
    p.k = 50;
    p.async_steps = 1;
    return p;
  };
  g.points.push_back(prefills(64, 256));
  g.points.push_back(prefills(128, 256));
  g.points.push_back(prefills(96, 512));
  return g;
}

/// "lo-hi" (or "v") of a field over the points where `when` holds.
template <class When>
std::string span(const CalibrationGrid& g, std::uint32_t CalibrationPoint::*field, When when) {
  std::uint32_t lo = ~0u, hi = 0;
  for (const auto& p : g.points) {
    if (!when(p)) continue;
    lo = std::min(lo, p.*field);
    hi = std::max(hi, p.*field);
  }
  if (lo > hi) return "none";
  return lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi);
}

std::string describe(const CalibrationGrid& g) {
  const auto& s = g.shape;
  auto first = [](const P& p) { return p.prefill_batch > 0 && p.prefill_chunks == 0; };
  auto cont = [](const P& p) { return p.prefill_batch > 0 && p.prefill_chunks > 0; };
  auto dec = [](const P& p) { return p.decode_batch > 0; };
  auto enc = [](const P& p) { return p.encodes > 0; };
  auto move = [](const P& p) { return p.loads + p.offloads > 0; };
  auto async = [](const P& p) { return p.async_loads > 0; };
  std::uint32_t ctx_lo = ~0u, ctx_hi = 0;
  for (const auto& p : g.points) {
    if (!dec(p)) continue;
    ctx_lo = std::min(ctx_lo, decoder_prompt(s, p.decode_chunks));
    ctx_hi = std::max(ctx_hi, decoder_prompt(s, p.decode_chunks));
  }
  return std::to_string(g.points.size()) + " points. Prefill batch " +
         span(g, &P::prefill_batch, first) + " x " + span(g, &P::prefill_tokens, first) +
         " tokens x k " + span(g, &P::k, first) + " facts of " + std::to_string(s.fact_tokens) +
         " tokens; continuation chunks of " + span(g, &P::prefill_tokens, cont) + " tokens after " +
         span(g, &P::prefill_chunks, cont) + " pieces of " + std::to_string(s.chunk_tokens) +
         " context tokens; decode batch " + span(g, &P::decode_batch, dec) + " x context " +
         std::to_string(ctx_lo) + "-" + std::to_string(ctx_hi) +
         ", alone and with prefills, encodes and loads; encodes " + span(g, &P::encodes, enc) +
         " x " + span(g, &P::encode_tokens, enc) + " tokens after " +
         span(g, &P::encode_context, enc) + " context tokens; host loads and offloads of " +
         span(g, &P::loads, move) + " / " + span(g, &P::offloads, move) + " facts of " +
         span(g, &P::move_tokens, move) + " tokens; " +
         (std::any_of(g.points.begin(), g.points.end(), async)
              ? "asynchronous loads of " + span(g, &P::async_loads, async) + " facts of " +
                    span(g, &P::move_tokens, async) + " tokens; "
              : std::string()) +
         "header " + std::to_string(s.header_tokens) + " tokens cached; at most " +
         std::to_string(kMaxStepTokens) + " forward tokens and " +
         std::to_string(kMaxDecodeKvTokens) + " decoder KV tokens a step";
}

}  // namespace

std::string CalibrationPoint::label(const CalibrationShape& s) const {
  std::string out;
  auto part = [&out](const std::string& p) { out += (out.empty() ? "" : " + ") + p; };
  if (decode_batch > 0) {
    part("decode " + std::to_string(decode_batch) + "@" +
         std::to_string(decoder_prompt(s, decode_chunks)));
  }
  if (prefill_batch > 0) {
    std::string p =
        "prefill " + std::to_string(prefill_batch) + "x" + std::to_string(prefill_tokens);
    if (prefill_chunks > 0) p += " after " + std::to_string(prefill_chunks * s.chunk_tokens);
    if (k > 0) p += " k" + std::to_string(k);
    part(p);
  }
  if (encodes > 0) {
    part("encode " + std::to_string(encodes) + "x" + std::to_string(encode_tokens) + " w" +
         std::to_string(encode_context));
  }
  if (loads > 0) part("load " + std::to_string(loads) + "x" + std::to_string(move_tokens));
  if (offloads > 0) part("offload " + std::to_string(offloads) + "x" + std::to_string(move_tokens));
  if (async_loads > 0) {
    part("async load " + std::to_string(async_loads) + "x" + std::to_string(move_tokens) +
         (async_steps > 1    ? " over " + std::to_string(async_steps) + " steps"
          : async_steps == 1 ? " over 1 step"
                             : ""));
  }
  if (async_offloads > 0) {
    part("async offload " + std::to_string(async_offloads) + "x" + std::to_string(move_tokens) +
         (offload_victims ? " victims" : ""));
  }
  return out.empty() ? "empty" : out;
}

std::vector<std::string> calibration_grid_names() {
  return {"small", "full", "full_mixed", "copy_lanes"};
}

CalibrationGrid make_calibration_grid(const std::string& name) {
  CalibrationGrid g;
  if (name == "small") {
    g = small_grid();
  } else if (name == "full") {
    g = full_grid();
  } else if (name == "full_mixed") {
    g = full_mixed_grid();
  } else if (name == "copy_lanes") {
    g = copy_lanes_grid();
  } else {
    throw std::invalid_argument("unknown calibration grid '" + name +
                                "' (small, full, full_mixed, copy_lanes)");
  }
  g.description = describe(g);
  return g;
}

CalibrationPlanner::CalibrationPlanner(ModelConfig model, CalibrationShape shape)
    : model_(std::move(model)), shape_(shape) {}

CalibrationPlanner::Prompt CalibrationPlanner::prompt(std::uint32_t k_facts, std::uint32_t chunks,
                                                      std::uint32_t computed,
                                                      std::uint32_t variant) {
  if (k_facts > shape_.bank_facts || chunks > shape_.bank_chunks) {
    throw std::invalid_argument("calibration prompt: more facts or context pieces than the bank");
  }
  Prompt p;
  p.request = next_request_++;
  for (std::uint32_t j = 0; j < chunks; ++j) {
    p.facts.emplace_back(calibration_bank_chunk((variant + j) % shape_.bank_chunks),
                         shape_.chunk_tokens);
  }
  // Distinct facts per request; requests of a step start at different bank offsets.
  for (std::uint32_t j = 0; j < k_facts; ++j) {
    p.facts.emplace_back(calibration_bank_fact((variant * 7 + j) % shape_.bank_facts),
                         shape_.fact_tokens);
  }
  p.computed = computed;
  p.prompt_tokens =
      shape_.header_tokens + chunks * shape_.chunk_tokens + k_facts * shape_.fact_tokens + computed;
  return p;
}

void CalibrationPlanner::add_prefill(BatchPlan& plan, const Prompt& p, bool first_chunk,
                                     std::uint32_t computed_now, bool last_chunk) const {
  PrefillItem item;
  item.request = p.request;
  item.header_tokens = shape_.header_tokens;
  item.query_tokens = p.computed;
  // Every chunk carries the prompt's facts (an executor composes the layout from them); only
  // the first chunk injects.
  item.facts_begin = std::uint32_t(plan.prompt_facts.size());
  std::uint32_t position = shape_.header_tokens;
  for (const auto& [fact, tokens] : p.facts) {
    plan.prompt_facts.push_back(PromptFact{fact, tokens, position, true, false});
    position += tokens;
  }
  item.facts_end = std::uint32_t(plan.prompt_facts.size());
  item.prompt_tokens = p.prompt_tokens;
  item.computed_total = p.computed;
  item.computed_done = first_chunk ? 0 : p.computed - computed_now;
  item.computed_now = computed_now;
  item.present_tokens = p.prompt_tokens - p.computed + item.computed_done;
  item.header_cached = true;
  item.first_chunk = first_chunk;
  item.last_chunk = last_chunk;
  plan.prefills.push_back(item);
}

std::vector<CalibrationStep> CalibrationPlanner::preamble() {
  CalibrationStep s;
  for (std::uint32_t i = 0; i < shape_.bank_facts; ++i) {
    s.plan.encodes.push_back(FactEncode{calibration_bank_fact(i), 0, shape_.fact_tokens, 0, true});
  }
  for (std::uint32_t i = 0; i < shape_.bank_chunks; ++i) {
    s.plan.encodes.push_back(
        FactEncode{calibration_bank_chunk(i), 0, shape_.chunk_tokens, 0, true});
  }
  // Warm-up: the first prefill caches the header (a forward pass of its own) and the first
  // steps of a device pay one-time costs; neither belongs to a point.
  std::vector<CalibrationStep> out{s};
  for (std::uint32_t tokens : {16u, 1024u}) {
    CalibrationStep warm;
    const Prompt p = prompt(0, 0, tokens, 0);
    add_prefill(warm.plan, p, true, tokens, true);
    warm.plan.released.push_back(p.request);
    out.push_back(std::move(warm));
  }
  return out;
}

std::vector<CalibrationStep> CalibrationPlanner::postamble() {
  CalibrationStep s;
  for (std::uint32_t i = 0; i < shape_.bank_facts; ++i) {
    s.plan.evictions.push_back(calibration_bank_fact(i));
  }
  for (std::uint32_t i = 0; i < shape_.bank_chunks; ++i) {
    s.plan.evictions.push_back(calibration_bank_chunk(i));
  }
  return {s};
}

std::vector<CalibrationStep> CalibrationPlanner::steps(const CalibrationPoint& pt,
                                                       std::uint32_t measured) {
  std::vector<CalibrationStep> out;
  const std::uint64_t kv = model_.kv_bytes_per_token();
  // A fact moves its tokens' rows (the pool's blocks are copied without their unused rows), as
  // the simulator prices its loads and offloads.
  const std::uint64_t move_bytes = std::uint64_t(pt.move_tokens) * kv;

  // Decoders: prefilled (context injected, query computed) before the measured steps.
  std::vector<Prompt> decoders;
  if (pt.decode_batch > 0) {
    CalibrationStep setup;
    for (std::uint32_t i = 0; i < pt.decode_batch; ++i) {
      decoders.push_back(prompt(0, pt.decode_chunks, shape_.query_tokens, i));
      add_prefill(setup.plan, decoders.back(), true, shape_.query_tokens, true);
    }
    out.push_back(std::move(setup));
  }
  // Facts to move: loads come from the host tier (encoded, offloaded, evicted first);
  // offloads copy facts resident in the pool.
  // Asynchronous loads are loads (load_facts) issued on the copy lanes.
  // Asynchronous offloads (async_offloads) are offloads issued on the other lane.
  if (pt.async_offloads > 0 && pt.async_loads == 0) {
    throw std::invalid_argument("calibration point '" + pt.label(shape_) +
                                "': async_offloads needs async_loads");
  }
  if (pt.offload_victims && pt.async_offloads == 0) {
    throw std::invalid_argument("calibration point '" + pt.label(shape_) +
                                "': offload_victims needs async_offloads");
  }
  const std::uint32_t loads = pt.loads + pt.async_loads;
  const std::uint32_t offloads = pt.offloads + pt.async_offloads;
  std::vector<FactId> load_facts, offload_facts;
  // The facts to load are encoded, then parked on the host (offloaded and evicted). A point of
  // more than kMaxEncodeFacts facts (a wave's size) encodes at most that many a step and parks
  // each step's facts to load right after, so that the pool never holds them all at once.
  auto park = [&](std::size_t from) {
    if (from == load_facts.size()) return;
    CalibrationStep s;
    for (std::size_t i = from; i < load_facts.size(); ++i) {
      s.plan.offloads.push_back(FactLoad{load_facts[i], pt.move_tokens, move_bytes});
      s.plan.evictions.push_back(load_facts[i]);
    }
    out.push_back(std::move(s));
  };
  const bool wave = loads + offloads > kMaxEncodeFacts;
  std::size_t parked = 0;
  for (std::uint32_t i = 0; i < loads + offloads; ++i) {
    if (i % kMaxEncodeFacts == 0) {
      if (wave) {
        park(parked);
        parked = load_facts.size();
      }
      out.emplace_back();
    }
    const FactId f = fresh_fact();
    (i < loads ? load_facts : offload_facts).push_back(f);
    out.back().plan.encodes.push_back(FactEncode{f, 0, pt.move_tokens, 0, true});
  }
  park(parked);

  // Steps of the loads' sequence (async_steps) come before each measured step: decode steps,
  // the first with the point's prefills (first chunks) if it has any, beside which the copies go.
  const bool sequence = pt.async_loads > 0 && pt.async_steps > 0;
  const bool prefill_beside = sequence && pt.prefill_batch > 0;
  if (sequence && decoders.empty() && (pt.prefill_batch == 0 || pt.async_steps > 1)) {
    throw std::invalid_argument("calibration point '" + pt.label(shape_) +
                                "': async_steps needs decodes (or prefills, over one step)");
  }
  if (prefill_beside && pt.prefill_chunks > 0) {
    throw std::invalid_argument("calibration point '" + pt.label(shape_) +
                                "': copies beside continuation chunks are not planned");
  }
  // The offloads (and with offload_victims, the evictions of the offloaded facts) of the step
  // that issues the asynchronous loads.
  auto add_offloads = [&](BatchPlan& plan) {
    for (std::size_t i = 0; i < offload_facts.size(); ++i) {
      (i < pt.offloads ? plan.offloads : plan.async_offloads)
          .push_back(FactLoad{offload_facts[i], pt.move_tokens, move_bytes});
    }
    if (pt.offload_victims) plan.evictions = offload_facts;
  };
  std::uint32_t decoded = 0;  // decode steps so far: each decoder's next position
  for (std::uint32_t rep = 0; rep < measured; ++rep) {
    for (std::uint32_t i = 0; sequence && i < pt.async_steps; ++i) {
      CalibrationStep a;
      a.measured = true;
      a.continues = true;
      for (const Prompt& d : decoders) {
        a.plan.decodes.push_back(DecodeItem{d.request, d.prompt_tokens + decoded});
      }
      ++decoded;
      if (i == 0) {  // both lanes' copies issued beside the first pass
        for (std::uint32_t j = 0; prefill_beside && j < pt.prefill_batch; ++j) {
          const Prompt p = prompt(pt.k, 0, pt.prefill_tokens, rep * pt.prefill_batch + j);
          add_prefill(a.plan, p, true, pt.prefill_tokens, true);
          a.plan.released.push_back(p.request);
        }
        for (FactId f : load_facts) {
          a.plan.async_loads.push_back(FactLoad{f, pt.move_tokens, move_bytes});
        }
        add_offloads(a.plan);
      }
      out.push_back(std::move(a));
    }
    std::vector<Prompt> prefills;
    if (pt.prefill_batch > 0 && pt.prefill_chunks > 0) {
      // The context arrives (injected) in an unmeasured first chunk that computes nothing.
      CalibrationStep context;
      for (std::uint32_t i = 0; i < pt.prefill_batch; ++i) {
        prefills.push_back(prompt(0, pt.prefill_chunks, pt.prefill_tokens, i));
        add_prefill(context.plan, prefills.back(), true, 0, false);
      }
      out.push_back(std::move(context));
    }
    CalibrationStep m;
    m.measured = true;
    for (const Prompt& d : decoders) {
      m.plan.decodes.push_back(DecodeItem{d.request, d.prompt_tokens + decoded});
    }
    if (!decoders.empty()) ++decoded;
    if (pt.prefill_batch > 0 && !prefill_beside) {
      if (pt.prefill_chunks > 0) {
        for (const Prompt& p : prefills) add_prefill(m.plan, p, false, p.computed, true);
      } else {
        for (std::uint32_t i = 0; i < pt.prefill_batch; ++i) {
          prefills.push_back(prompt(pt.k, 0, pt.prefill_tokens, rep * pt.prefill_batch + i));
          add_prefill(m.plan, prefills.back(), true, pt.prefill_tokens, true);
        }
      }
      for (const Prompt& p : prefills) m.plan.released.push_back(p.request);
    }
    std::vector<FactId> encoded;
    for (std::uint32_t i = 0; i < pt.encodes; ++i) {
      encoded.push_back(fresh_fact());
      m.plan.encodes.push_back(
          FactEncode{encoded.back(), 0, pt.encode_tokens, pt.encode_context, true});
    }
    for (std::size_t i = 0; !sequence && i < load_facts.size(); ++i) {  // a sequence issued them
      (pt.async_loads > 0 ? m.plan.async_loads : m.plan.loads)
          .push_back(FactLoad{load_facts[i], pt.move_tokens, move_bytes});
    }
    if (pt.async_loads > 0) {  // a prefill that injects the last copy: the step waits for all
      Prompt p;
      p.request = next_request_++;
      p.facts.emplace_back(load_facts.back(), pt.move_tokens);
      p.computed = shape_.query_tokens;
      p.prompt_tokens = shape_.header_tokens + pt.move_tokens + p.computed;
      add_prefill(m.plan, p, true, p.computed, true);
      m.plan.released.push_back(p.request);
    }
    if (!sequence) add_offloads(m.plan);
    if (rep + 1 == measured) {
      for (const Prompt& d : decoders) m.plan.released.push_back(d.request);
    }
    out.push_back(std::move(m));
    if (!encoded.empty() || !load_facts.empty()) {
      CalibrationStep evict;
      evict.plan.evictions = encoded;
      evict.plan.evictions.insert(evict.plan.evictions.end(), load_facts.begin(), load_facts.end());
      if (pt.offload_victims) {  // the victims back (their offloads done first: a loads' rule)
        for (FactId f : offload_facts) {
          evict.plan.loads.push_back(FactLoad{f, pt.move_tokens, move_bytes});
        }
      }
      out.push_back(std::move(evict));
    }
  }
  if (measured == 0 && !decoders.empty()) {
    CalibrationStep release;
    for (const Prompt& d : decoders) release.plan.released.push_back(d.request);
    out.push_back(std::move(release));
  }
  if (!load_facts.empty() || !offload_facts.empty()) {
    CalibrationStep drop;
    drop.plan.evictions = offload_facts;
    drop.plan.host_evictions = load_facts;
    drop.plan.host_evictions.insert(drop.plan.host_evictions.end(), offload_facts.begin(),
                                    offload_facts.end());
    out.push_back(std::move(drop));
  }
  return out;
}

CalibrationNeeds calibration_needs(const CalibrationGrid& grid, const ModelConfig& model,
                                   std::uint32_t measured) {
  CalibrationNeeds n;
  CalibrationPlanner planner(model, grid.shape);
  std::map<RequestId, std::uint32_t> live;  // request -> prompt tokens
  std::map<FactId, std::uint64_t> pool;     // fact -> blocks
  std::map<FactId, std::uint64_t> host;     // fact -> blocks
  std::uint64_t live_tokens = 0, pool_blocks = 0, host_blocks = 0;
  std::map<RequestId, std::uint32_t> decoded;
  auto walk = [&](const std::vector<CalibrationStep>& steps) {
    for (const CalibrationStep& s : steps) {
      const BatchPlan& p = s.plan;
      ++n.steps;
      if (s.measured) ++n.measured_steps;
      for (const auto* offloads : {&p.offloads, &p.async_offloads}) {
        for (const FactLoad& o : *offloads) {
          std::uint64_t& blocks = host[o.fact];  // 0 when new
          host_blocks += blocks_of(o.tokens) - blocks;
          blocks = blocks_of(o.tokens);
        }
      }
      for (FactId f : p.evictions) {
        if (auto it = pool.find(f); it != pool.end()) {
          pool_blocks -= it->second;
          pool.erase(it);
        }
      }
      for (const auto* loads : {&p.loads, &p.async_loads}) {
        for (const FactLoad& l : *loads) {
          pool_blocks += blocks_of(l.tokens) * (pool.count(l.fact) ? 0 : 1);
          pool[l.fact] = blocks_of(l.tokens);
        }
      }
      n.host_facts = std::max<std::uint64_t>(n.host_facts, host.size());
      n.host_blocks = std::max(n.host_blocks, host_blocks);
      for (FactId f : p.host_evictions) {
        if (auto it = host.find(f); it != host.end()) {
          host_blocks -= it->second;
          host.erase(it);
        }
      }
      std::uint64_t scratch = 0;
      for (const FactEncode& e : p.encodes) {
        if (!pool.count(e.fact)) pool_blocks += blocks_of(e.tokens);
        pool[e.fact] = blocks_of(e.tokens);
        scratch += e.tokens + e.context_tokens;
        n.max_position = std::max(n.max_position, e.tokens + e.context_tokens);
      }
      n.pool_blocks = std::max(n.pool_blocks, pool_blocks);
      for (const PrefillItem& i : p.prefills) {
        if (i.first_chunk) {
          live[i.request] = i.prompt_tokens;
          live_tokens += i.prompt_tokens;
        }
        n.max_position = std::max(n.max_position, i.prompt_tokens);
      }
      for (const DecodeItem& d : p.decodes) {
        const std::uint32_t steps_done = ++decoded[d.request];
        n.decode_steps = std::max(n.decode_steps, steps_done);
        n.max_position = std::max(n.max_position, d.context_tokens + 1);
      }
      n.cache_tokens = std::max(n.cache_tokens, live_tokens + scratch);
      n.requests = std::max<std::uint64_t>(n.requests, live.size());
      for (RequestId r : p.released) {
        if (auto it = live.find(r); it != live.end()) {
          live_tokens -= it->second;
          live.erase(it);
        }
      }
    }
  };
  walk(planner.preamble());
  for (const CalibrationPoint& pt : grid.points) walk(planner.steps(pt, measured));
  walk(planner.postamble());
  return n;
}

}  // namespace inferscale
