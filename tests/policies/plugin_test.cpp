// Out-of-tree policies: the example plugin loads and behaves as documented; every way a plugin
// can be wrong gives a clear error and leaves the store intact.
#include <map>

#include "tests/catch.h"
#include "tests/policies/policy_harness.h"

using namespace inferscale;
using namespace inferscale::test;

namespace {

std::unique_ptr<StoreTier> plugin_tier(
    const std::string& path, std::uint64_t capacity,
    std::initializer_list<std::pair<const char*, const char*>> extra = {}) {
  Params p("exp.yaml: store.gpu.params");
  p.set("path", path);
  for (const auto& [k, v] : extra) p.set(k, v);
  return make_tier("plugin", capacity, p);
}

std::string load_error(const std::string& path,
                       std::initializer_list<std::pair<const char*, const char*>> extra = {}) {
  try {
    plugin_tier(path, 100, extra);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the example plugin evicts the cheapest fact per byte and honours pins") {
  Bench b(plugin_tier(INFERSCALE_EXAMPLE_POLICY, 30));
  b.access(entry(0, 10, 0, 100));
  b.access(entry(1, 10, 0, 50));
  b.access(entry(2, 10, 0, 200));
  b.access(entry(3, 10, 0, 400));
  CHECK(b.evicted == std::vector<FactId>{1});
  b.view.pins = {0};
  b.access(entry(4, 10, 0, 400));  // 0 is cheapest but pinned: 2
  CHECK(b.evicted == std::vector<FactId>{1, 2});
}

TEST_CASE("the example plugin takes its own parameters through the YAML params") {
  // recent_ms: facts used within the last 5 ms are spared while anything else can go.
  Bench b(plugin_tier(INFERSCALE_EXAMPLE_POLICY, 30, {{"recent_ms", "5"}}));
  const SimTime ms = kNsPerMs;
  b.access(entry(0, 10, 0, 100), 0);
  b.access(entry(1, 10, 0, 500), 0);
  b.access(entry(2, 10, 0, 50), 9 * ms);
  b.access(entry(3, 10, 0, 900), 10 * ms);  // 2 is cheapest but recent: 0
  CHECK(b.evicted == std::vector<FactId>{0});
  CHECK_THAT(load_error(INFERSCALE_EXAMPLE_POLICY, {{"recent_ms", "soon"}}),
             Catch::Matchers::Contains("refused its parameters: recent_ms: expected a number"));
  CHECK_THAT(load_error(INFERSCALE_EXAMPLE_POLICY, {{"colour", "red"}}),
             Catch::Matchers::Contains("unknown parameter 'colour'"));
}

TEST_CASE("loading errors name the path key and say what is wrong") {
  CHECK_THAT(load_error("/nonexistent/libpolicy.so"),
             Catch::Matchers::Contains("store.gpu.params.path: plugin library "
                                       "'/nonexistent/libpolicy.so' not found"));
  CHECK_THAT(load_error(INFERSCALE_SOURCE_DIR "/policies/plugin.h"),
             Catch::Matchers::Contains("cannot load plugin library"));
  CHECK_THAT(load_error(INFERSCALE_TEST_PLUGIN_no_descriptor),
             Catch::Matchers::Contains("does not export inferscale_policy_descriptor"));
  CHECK_THAT(load_error(INFERSCALE_TEST_PLUGIN_wrong_version),
             Catch::Matchers::Contains("has policy ABI version 999, this build supports 2"));
  CHECK_THAT(load_error(INFERSCALE_TEST_PLUGIN_old_version),
             Catch::Matchers::Contains("has policy ABI version 1, this build supports 2: rebuild "
                                       "it against this version's policies/plugin.h"));
  CHECK_THAT(load_error(INFERSCALE_TEST_PLUGIN_furthest_next),
             Catch::Matchers::Contains("reads the trace's future (INFERSCALE_POLICY_OFFLINE): "
                                       "select it as 'plugin_offline'"));
  CHECK_THAT(load_error(INFERSCALE_TEST_PLUGIN_refuses_params, {{"x", "1"}}),
             Catch::Matchers::Contains("needs the parameter 'mode' (got 1 parameters)"));
  Params no_path("exp.yaml: store.gpu.params");
  CHECK_THROWS_WITH(make_tier("plugin", 100, no_path),
                    Catch::Matchers::Contains("needs the parameter 'path'"));
}

TEST_CASE("a plugin returning an unknown or pinned victim stops with an error, store intact") {
  for (const char* path :
       {INFERSCALE_TEST_PLUGIN_bad_victim, INFERSCALE_TEST_PLUGIN_pinned_victim}) {
    Bench b(plugin_tier(path, 20));
    b.access(0);
    b.access(1);
    b.view.pins = {0, 1};
    const bool pinned_case = std::string(path) == INFERSCALE_TEST_PLUGIN_pinned_victim;
    CHECK_THROWS_AS(b.access(2), PolicyContractError);
    try {
      b.access(3);
    } catch (const PolicyContractError& e) {
      CHECK_THAT(e.what(), Catch::Matchers::Contains(pinned_case ? "pinned by a running request"
                                                                 : "which is not resident"));
    }
    CHECK(b.tier->resident(0));
    CHECK(b.tier->resident(1));
    CHECK(b.tier->used_bytes() == 20);
    CHECK(b.tier->resident_count() == 2);
  }
}

// ABI 2: what in-tree policies see reaches plugins too.

TEST_CASE("an offline plugin reads the future through attach() and the query") {
  // Single-fact requests of equal size: Belady's rule is optimal, so the plugin's rule hits
  // exactly as often as the built-in belady (ties among facts never needed again aside, every
  // furthest-first choice is optimal).
  const auto trace = sequence({0, 1, 2, 0, 3, 1, 0, 4, 2, 0, 1, 3, 5, 0, 1, 2, 6, 0, 3, 1, 4, 0});
  const AccessOracle oracle(trace.fact_lists());
  for (std::uint64_t capacity : {20, 30, 40}) {
    INFO("capacity " << capacity);
    Params p("params");
    p.set("path", INFERSCALE_TEST_PLUGIN_furthest_next);
    const auto plugin = replay(trace, make_tier("plugin_offline", capacity, p), &oracle);
    const auto belady = replay(trace, make_tier("belady", capacity), &oracle);
    CHECK(plugin.stats.hits == belady.stats.hits);
    CHECK(plugin.stats.hits > 0);
  }
  CHECK(PolicyRegistry::find_eviction("plugin_offline")->offline);
  CHECK_FALSE(PolicyRegistry::find_eviction("plugin")->offline);
}

TEST_CASE("a plugin sees each user's last activity") {
  struct Activity : TestView {
    std::map<UserId, SimTime> active;
    SimTime user_last_active(UserId user) const override {
      const auto it = active.find(user);
      return it == active.end() ? kNever : it->second;
    }
  };
  Activity view;
  auto tier = plugin_tier(INFERSCALE_TEST_PLUGIN_idle_user, 20);
  tier->set_view(&view);
  std::vector<FactId> evicted;
  const auto access = [&](FactId id, UserId user) {
    if (!tier->lookup(entry(id, 10, user), 0)) tier->insert(entry(id, 10, user), 0, &evicted);
  };
  view.active = {{1, 100}, {2, 50}, {3, 200}, {4, 300}};
  access(0, 1);
  access(1, 2);
  access(2, 3);  // user 2 idle longest: fact 1
  CHECK(evicted == std::vector<FactId>{1});
  view.active[1] = 400;
  access(3, 4);  // now user 3 (200) is idle longest: fact 2
  CHECK(evicted == std::vector<FactId>{1, 2});
}
