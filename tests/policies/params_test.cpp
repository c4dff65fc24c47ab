// Registry and parameter validation: every error names where it is and what was expected.
#include "tests/catch.h"
#include "tests/policies/policy_harness.h"

using namespace inferscale;
using namespace inferscale::test;

namespace {

std::string error_of(const std::string& policy, Params p) {
  try {
    PolicyRegistry::make_eviction(policy, PolicyArgs{p, 1000, 1}, "exp.yaml: store.gpu.eviction");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

Params at(std::initializer_list<std::pair<const char*, const char*>> kv) {
  Params p("exp.yaml: store.gpu.params");
  for (const auto& [k, v] : kv) p.set(k, v);
  return p;
}

}  // namespace

TEST_CASE("an unknown policy name lists the known ones") {
  const auto e = error_of("lru2", {});
  CHECK_THAT(e, Catch::Matchers::Contains("exp.yaml: store.gpu.eviction"));
  CHECK_THAT(e, Catch::Matchers::Contains("unknown eviction policy 'lru2'"));
  CHECK_THAT(e, Catch::Matchers::Contains("s3fifo"));
  CHECK_THROWS_WITH(PolicyRegistry::make_admission("sometimes", PolicyArgs{}, "adm"),
                    Catch::Matchers::Contains("tinylfu"));
}

TEST_CASE("policy parameters are checked with the key path in the message") {
  CHECK_THAT(error_of("s3fifo", at({{"small_fraction", "2"}})),
             Catch::Matchers::Contains("store.gpu.params.small_fraction: parameter "
                                       "'small_fraction': expected a value in"));
  CHECK_THAT(error_of("s3fifo", at({{"small_fraction", "ten"}})),
             Catch::Matchers::Contains("expected a number, got 'ten'"));
  CHECK_THAT(error_of("s3fifo", at({{"move_threshold", "1.5"}})),
             Catch::Matchers::Contains("expected an integer"));
  CHECK_THAT(error_of("gdsf", at({{"cost", "magic"}})),
             Catch::Matchers::Contains("expected one of recompute, uniform"));
  CHECK_THAT(error_of("lru", at({{"size", "3"}})),
             Catch::Matchers::Contains("unknown parameter 'size' (known: none)"));
  CHECK_THAT(error_of("lfu", at({{"aging", "3"}})),
             Catch::Matchers::Contains("(known: aging_period)"));
  CHECK(error_of("cost_aware", at({{"half_life_ms", "250"}})).empty());
}

TEST_CASE("every registered policy has a name, a description and documented parameters") {
  for (const auto& info : PolicyRegistry::eviction()) {
    CHECK(!info.name.empty());
    CHECK(!info.description.empty());
    for (const auto& p : info.params) CHECK(!p.description.empty());
  }
  for (const char* name : {"fifo", "lru", "lfu", "clock", "sieve", "s3fifo", "arc", "two_q", "slru",
                           "gdsf", "cost_aware", "user_lru", "belady", "belady_size", "random",
                           "w_tinylfu", "plugin", "unbounded"}) {
    CHECK(PolicyRegistry::find_eviction(name) != nullptr);
  }
  for (const char* name : {"always", "tinylfu", "size_threshold", "probabilistic"}) {
    CHECK(PolicyRegistry::find_admission(name) != nullptr);
  }
  CHECK(PolicyRegistry::find_eviction("belady")->offline);
  CHECK(PolicyRegistry::find_eviction("belady_size")->offline);
  CHECK_FALSE(PolicyRegistry::find_eviction("lru")->offline);
}
