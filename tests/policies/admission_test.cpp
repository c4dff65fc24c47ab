// Admission policies: always, tinylfu, size_threshold, probabilistic.
#include "tests/catch.h"
#include "tests/policies/policy_harness.h"

using namespace inferscale;
using namespace inferscale::test;

namespace {

std::unique_ptr<AdmissionPolicy> admission(const std::string& name, Params p,
                                           std::uint64_t capacity = 1000) {
  return PolicyRegistry::make_admission(name, PolicyArgs{p, capacity, 3}, "admission");
}

}  // namespace

TEST_CASE("tinylfu admits from the threshold-th lookup on, the doorkeeper takes the first") {
  auto a = admission("tinylfu", params({{"threshold", "3"}, {"width", "1024"}}));
  const auto e = entry(42);
  a->on_access(e, 0);
  CHECK_FALSE(a->admit(e, 0));
  a->on_access(e, 0);
  CHECK_FALSE(a->admit(e, 0));
  a->on_access(e, 0);
  CHECK(a->admit(e, 0));
  CHECK_FALSE(a->admit(entry(43), 0));  // never looked up
}

TEST_CASE("tinylfu forgets: counts halve after sample_size lookups") {
  auto a =
      admission("tinylfu", params({{"threshold", "2"}, {"width", "1024"}, {"sample_size", "100"}}));
  const auto e = entry(7);
  a->on_access(e, 0);
  a->on_access(e, 0);
  CHECK(a->admit(e, 0));
  for (FactId f = 1000; f < 1100; ++f) a->on_access(entry(f), 0);  // a reset clears the doorkeeper
  CHECK_FALSE(a->admit(e, 0));
}

TEST_CASE("tinylfu in a tier keeps one-hit facts out") {
  Bench b(make_tier("lru", 30, {}, "tinylfu", params({{"width", "1024"}})));
  b.access(1);
  CHECK_FALSE(b.tier->resident(1));
  b.access(1);
  CHECK(b.tier->resident(1));
  CHECK(b.tier->stats().rejected == 1);
}

TEST_CASE("size_threshold admits up to the smaller of its limits") {
  auto a = admission("size_threshold", params({{"max_bytes", "15"}, {"max_fraction", "1"}}));
  CHECK(a->admit(entry(0, 15), 0));
  CHECK_FALSE(a->admit(entry(0, 16), 0));
  auto f = admission("size_threshold", params({{"max_fraction", "0.1"}}), 100);
  CHECK(f->admit(entry(0, 10), 0));
  CHECK_FALSE(f->admit(entry(0, 11), 0));
}

TEST_CASE("probabilistic admits about p of the facts, fewer of the large ones") {
  auto never = admission("probabilistic", params({{"probability", "0"}}));
  auto always = admission("probabilistic", params({{"probability", "1"}}));
  auto half = admission("probabilistic", params({{"probability", "0.5"}}));
  auto sized =
      admission("probabilistic", params({{"probability", "1"}, {"size_scale_bytes", "100"}}));
  int n_never = 0, n_always = 0, n_half = 0, small = 0, large = 0;
  for (int i = 0; i < 10000; ++i) {
    n_never += never->admit(entry(i), 0);
    n_always += always->admit(entry(i), 0);
    n_half += half->admit(entry(i), 0);
    small += sized->admit(entry(i, 10), 0);   // p = exp(-0.1) = 0.90
    large += sized->admit(entry(i, 300), 0);  // p = exp(-3) = 0.05
  }
  CHECK(n_never == 0);
  CHECK(n_always == 10000);
  CHECK(n_half > 4700);  // binomial(10000, 0.5): sd 50
  CHECK(n_half < 5300);
  CHECK(small > 8700);
  CHECK(large < 700);
}
