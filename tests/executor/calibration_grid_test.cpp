// The calibration grid: its step sequences are valid for a stateful executor, every axis is
// exercised, a point the planner cannot sequence is refused, and the KV cache of its executor
// fits the card.
#include <map>
#include <set>

#include "executor/copy_order.h"
#include "executor/cost_model/calibration_profiler.h"
#include "tests/catch.h"
#include "tests/executor/model_shapes.h"

using namespace inferscale;
using test_shapes::llama_8b;

TEST_CASE("calibration grid: step sequences are valid for a stateful executor") {
  const ModelConfig m = llama_8b();
  for (const std::string& name : calibration_grid_names()) {
    INFO(name);
    const CalibrationGrid grid = make_calibration_grid(name);
    REQUIRE(grid.points.size() >= (name == "copy_lanes" ? 6u : 40u));
    CalibrationPlanner planner(m, grid.shape);
    std::set<FactId> pool, host;
    std::map<RequestId, bool> running;  // request -> prefilled (last chunk done)
    std::size_t measured = 0, measured_steps = 0, async_offloads = 0, victim_steps = 0;
    std::size_t lanes_beside_decodes = 0, lanes_beside_prefills = 0, max_encodes = 0;
    auto walk = [&](const std::vector<CalibrationStep>& steps) {
      for (const CalibrationStep& s : steps) {
        const BatchPlan& p = s.plan;
        measured += s.measured && !s.continues;  // samples (a run of continuing steps is one)
        measured_steps += s.measured;
        for (const auto* offloads : {&p.offloads, &p.async_offloads}) {
          for (const auto& o : *offloads) {
            CHECK(pool.count(o.fact) == 1);
            // The rows of its tokens, as the executor copies them and the simulator prices them.
            CHECK(o.bytes == std::uint64_t(o.tokens) * m.kv_bytes_per_token());
            host.insert(o.fact);
          }
          async_offloads += offloads == &p.async_offloads ? offloads->size() : 0;
        }
        // A step whose asynchronous offloads are its victims: the loads take their blocks.
        if (!p.async_offloads.empty() && p.evictions.size() == p.async_offloads.size()) {
          bool same = true;
          for (std::size_t i = 0; i < p.evictions.size(); ++i) {
            same = same && p.evictions[i] == p.async_offloads[i].fact;
          }
          victim_steps += same && p.async_loads.size() == p.async_offloads.size();
        }
        // Both lanes' copies issued in a step that only decodes (beside its pass).
        lanes_beside_decodes += !p.async_offloads.empty() && !p.async_loads.empty() &&
                                !p.decodes.empty() && p.prefills.empty();
        // ... or beside prefills that inject none of the step's loads.
        lanes_beside_prefills +=
            !p.async_offloads.empty() && !p.prefills.empty() && copies_follow_forward(p);
        max_encodes = std::max(max_encodes, p.encodes.size());
        for (FactId f : p.evictions) CHECK(pool.erase(f) == 1);
        for (const auto* loads : {&p.loads, &p.async_loads}) {
          for (const auto& l : *loads) {
            CHECK(host.count(l.fact) == 1);  // never a load the host tier cannot serve
            pool.insert(l.fact);
          }
        }
        for (FactId f : p.host_evictions) CHECK(host.erase(f) == 1);
        for (const auto& e : p.encodes) CHECK(pool.insert(e.fact).second);
        for (const auto& item : p.prefills) {
          std::uint32_t position = item.header_tokens;
          for (auto i = item.facts_begin; i < item.facts_end; ++i) {
            const PromptFact& f = p.prompt_facts[i];
            CHECK(pool.count(f.fact) == 1);  // injected facts are resident
            CHECK(f.position == position);   // contiguous composed positions
            position += f.tokens;
          }
          CHECK(position + item.query_tokens == item.prompt_tokens);
          CHECK(item.computed_done + item.computed_now <= item.computed_total);
          CHECK(item.present_tokens ==
                item.prompt_tokens - item.computed_total + item.computed_done);
          if (item.first_chunk) {
            CHECK(running.count(item.request) == 0);
            running[item.request] = false;
          } else {
            CHECK(running.count(item.request) == 1);
          }
          if (item.last_chunk) running[item.request] = true;
        }
        for (const auto& d : p.decodes) {
          REQUIRE(running.count(d.request) == 1);
          CHECK(running[d.request]);  // decodes only after the prefill finished
        }
        for (RequestId r : p.released) CHECK(running.erase(r) == 1);
      }
    };
    walk(planner.preamble());
    for (const auto& pt : grid.points) walk(planner.steps(pt, 3));
    walk(planner.postamble());
    CHECK(measured == 3 * grid.points.size());
    std::uint64_t steps_per_sample = 0;
    for (const auto& pt : grid.points) steps_per_sample += pt.async_steps + 1;
    CHECK(measured_steps == 3 * steps_per_sample);
    CHECK(running.empty());  // every request released
    CHECK(pool.empty());     // every fact freed
    CHECK(host.empty());

    // Deterministic, and the needs walk agrees with what the steps hold.
    const auto n1 = calibration_needs(grid, m, 3), n2 = calibration_needs(grid, m, 3);
    CHECK(n1.cache_tokens == n2.cache_tokens);
    CHECK(n1.measured_steps == measured_steps);
    if (name != "copy_lanes") {  // copy_lanes: asynchronous loads and one short prefill each
      CHECK(n1.decode_steps == 3);
      CHECK(n1.max_position >= grid.shape.header_tokens + 16 * grid.shape.chunk_tokens);
    } else {
      CHECK(n1.pool_blocks >= 256 * ((256 + 15) / 16));  // the largest point's facts at once
      CHECK(async_offloads > 0);                         // both lanes at once (the duplex)
      CHECK(victim_steps == 3 * 8);      // eight points whose loads take their offloads' blocks
      CHECK(lanes_beside_decodes == 3);  // one point, each sample
      CHECK(lanes_beside_prefills == 3 * 3);  // three points (64, 96 and 128 prefills)
      // The wave-sized point: 4,096 facts of 17 tokens (2 blocks) each way at once, their
      // encodes spread over steps of at most 2,048, the facts to load parked step by step: the
      // pool holds the victims and at most one step's facts to load, never all of them.
      CHECK(n1.host_blocks >= 2 * 4096 * 2);
      CHECK(n1.pool_blocks >= 4096 * 2);
      CHECK(n1.pool_blocks < 4096 * 2 + 2048 * 2);
      CHECK(max_encodes == 2048);
    }
  }
}

TEST_CASE("calibration grid: every axis of the issue is exercised") {
  const CalibrationGrid grid = make_calibration_grid("full");
  std::set<std::uint32_t> batches, tokens, ks, decode_batches, chunks;
  bool encodes = false, loads = false, offloads = false, mixed = false, continuation = false;
  for (const auto& p : grid.points) {
    if (p.prefill_batch) batches.insert(p.prefill_batch);
    if (p.prefill_batch) tokens.insert(p.prefill_tokens);
    if (p.prefill_batch && !p.prefill_chunks) ks.insert(p.k);
    if (p.decode_batch) decode_batches.insert(p.decode_batch);
    if (p.decode_batch) chunks.insert(p.decode_chunks);
    encodes |= p.encodes > 0 && p.encode_context > 0;
    loads |= p.loads > 0;
    offloads |= p.offloads > 0;
    mixed |= p.decode_batch > 0 && p.prefill_batch > 0;
    continuation |= p.prefill_chunks > 0;
  }
  CHECK(batches.size() >= 5);
  CHECK(tokens.size() >= 5);
  CHECK(ks.size() >= 3);
  CHECK(decode_batches.size() >= 8);
  CHECK(chunks.size() >= 4);
  CHECK((encodes && loads && offloads && mixed && continuation));
  CHECK_THROWS_AS(make_calibration_grid("huge"), std::invalid_argument);
}

TEST_CASE("calibration grid: a point the planner cannot sequence is refused") {
  CalibrationPlanner planner(llama_8b(), CalibrationShape{});
  planner.preamble();
  auto plan = [&](auto edit) {
    CalibrationPoint p;
    p.async_loads = 4, p.move_tokens = 17;
    edit(p);
    return planner.steps(p, 1);
  };
  CHECK_NOTHROW(plan([](CalibrationPoint& p) {  // prefills beside the copies, over one step
    p.prefill_batch = 2, p.prefill_tokens = 16, p.k = 3, p.async_steps = 1;
  }));
  // Over two steps without decodes the second would be empty; continuation chunks beside copies
  // are not planned; offloads without loads; steps without passes beside them.
  CHECK_THROWS_AS(plan([](CalibrationPoint& p) {
                    p.prefill_batch = 2, p.prefill_tokens = 16, p.k = 3, p.async_steps = 2;
                  }),
                  std::invalid_argument);
  CHECK_THROWS_AS(plan([](CalibrationPoint& p) {
                    p.decode_batch = 2, p.decode_chunks = 1, p.prefill_batch = 2;
                    p.prefill_tokens = 16, p.prefill_chunks = 2, p.async_steps = 1;
                  }),
                  std::invalid_argument);
  CHECK_THROWS_AS(plan([](CalibrationPoint& p) { p.async_loads = 0, p.async_offloads = 4; }),
                  std::invalid_argument);
  CHECK_THROWS_AS(plan([](CalibrationPoint& p) { p.async_steps = 1; }), std::invalid_argument);
}

TEST_CASE(
    "calibration KV cache: half again of the live rows where the card has room, less where not") {
  CalibrationNeeds n;
  n.cache_tokens = 100000;
  n.requests = 512;
  n.decode_steps = 56;  // 64 rows reserved a request
  const std::uint64_t live = 100000 + 512 * 64;
  CHECK(n.live_rows() == live);
  CHECK(n.min_cache_rows() == live + 4096);
  CHECK(n.cache_rows() == live + live / 2 + 4096);
  const std::uint64_t row = 131072, fixed = 40ull << 30;
  // Room for everything: the grid's rows.
  CHECK(n.cache_rows_within(fixed + n.cache_rows() * row + row, fixed, row) == n.cache_rows());
  // Room for part of the margin: all the room there is.
  const std::uint64_t some = n.min_cache_rows() + 1000;
  CHECK(n.cache_rows_within(fixed + some * row + row / 2, fixed, row) == some);
  // Exactly the live rows and their 4,096: still runs.
  CHECK(n.cache_rows_within(fixed + n.min_cache_rows() * row, fixed, row) == n.min_cache_rows());
  // One row short, or less free than the fixed part: refused (0).
  CHECK(n.cache_rows_within(fixed + (n.min_cache_rows() - 1) * row, fixed, row) == 0);
  CHECK(n.cache_rows_within(fixed / 2, fixed, row) == 0);
}
