// The property checks of policies/policy_check.h: every in-tree policy passes them, a policy
// that breaks one property fails that one with a reason, and `inferscale policy check` runs them
// on plugins with the documented output and exit status.
#include <sys/wait.h>

#include <cstdio>
#include <memory>

#include "policies/policy_check.h"
#include "tests/catch.h"
#include "tests/policies/policy_harness.h"

using namespace inferscale;
using namespace inferscale::test;

namespace {

/// FIFO over resident facts; the subclasses below break one property each.
class Fifo : public EvictionPolicy {
 public:
  void on_insert(const CacheEntry& e, SimTime) override { order_.push_back(e.id); }
  void on_hit(const CacheEntry&, SimTime) override {}
  void on_remove(FactId id) override { order_.erase(std::find(order_.begin(), order_.end(), id)); }
  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    for (FactId id : order_) {
      if (!ctx.pinned(id)) return id;
    }
    return std::nullopt;
  }

 protected:
  std::vector<FactId> order_;  // oldest first
};

/// Each victim() call moves on to another fact.
class Impure final : public Fifo {
 public:
  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    for (std::size_t i = 0; i < order_.size(); ++i) {
      const FactId id = order_[(calls_ + i) % order_.size()];
      if (!ctx.pinned(id)) {
        ++calls_;
        return id;
      }
    }
    return std::nullopt;
  }

 private:
  mutable std::size_t calls_ = 0;
};

/// Every instance starts where the previous one left off: runs differ.
class Nondeterministic final : public Fifo {
 public:
  Nondeterministic() : offset_(instances_++) {}
  std::optional<FactId> victim(const EvictionContext& ctx) const override {
    for (std::size_t i = 0; i < order_.size(); ++i) {
      const FactId id = order_[(offset_ + i) % order_.size()];
      if (!ctx.pinned(id)) return id;
    }
    return std::nullopt;
  }

 private:
  static inline std::size_t instances_ = 0;
  std::size_t offset_;
};

/// Ignores pins.
class PinBlind final : public Fifo {
 public:
  std::optional<FactId> victim(const EvictionContext&) const override {
    if (order_.empty()) return std::nullopt;
    return order_.front();
  }
};

/// Forgets to drop evicted facts from its order: it names them again.
class Forgetful final : public Fifo {
 public:
  void on_evict(FactId, const EvictionContext&) override {}
};

template <class P>
PolicyCheckReport check() {
  return check_eviction_policy([](std::uint64_t) { return std::make_unique<P>(); });
}

PolicyCheckOptions quick() {
  PolicyCheckOptions o;
  o.sequences = 2;
  o.requests = 600;
  return o;
}

struct Cli {
  int status = -1;
  std::string output;
};

Cli policy_check(const std::string& args) {
  const std::string cmd =
      std::string(INFERSCALE_BINARY_DIR "/inferscale policy check ") + args + " 2>&1";
  Cli out;
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) out.output += buffer;
  const int status = pclose(pipe);
  out.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

}  // namespace

TEST_CASE("every registered eviction policy passes the property checks") {
  for (const auto& info : PolicyRegistry::eviction()) {
    INFO("policy " << info.name);
    Params p("params");
    if (info.name.rfind("plugin", 0) == 0) p.set("path", INFERSCALE_EXAMPLE_POLICY);
    const auto report = check_eviction_policy(
        [&](std::uint64_t capacity) {
          return PolicyRegistry::make_eviction(info.name, PolicyArgs{p, capacity, 7}, "eviction");
        },
        quick());
    REQUIRE(report.properties.size() == 4);
    for (const auto& prop : report.properties) {
      INFO(prop.name << ": " << prop.reason);
      CHECK(prop.passed);
    }
  }
}

TEST_CASE("a policy that breaks one property fails that property, with a reason") {
  const auto failed = [](const PolicyCheckReport& r) {
    std::vector<std::string> names;
    for (const auto& p : r.properties) {
      if (!p.passed) names.push_back(p.name);
    }
    return names;
  };
  CHECK(check<Fifo>().passed());

  const auto impure = check<Impure>();
  CHECK(failed(impure) == std::vector<std::string>{"side-effect-free victim"});
  CHECK_THAT(impure.find("side-effect-free victim")->reason,
             Catch::Matchers::Contains("two victim() calls in a row answered fact"));

  const auto random = check<Nondeterministic>();
  CHECK(failed(random) == std::vector<std::string>{"determinism"});
  CHECK_THAT(random.find("determinism")->reason,
             Catch::Matchers::Contains("the first run evicted fact"));

  const auto blind = check<PinBlind>();
  CHECK(failed(blind) == std::vector<std::string>{"pins"});
  CHECK_THAT(blind.find("pins")->reason,
             Catch::Matchers::Contains(", pinned by a running request"));

  const auto forgetful = check<Forgetful>();
  CHECK(failed(forgetful) == std::vector<std::string>{"capacity"});
  CHECK_THAT(forgetful.find("capacity")->reason,
             Catch::Matchers::Contains("which is not resident: evicting it frees nothing"));
}

TEST_CASE("an exception from the policy fails the property whose run it interrupted") {
  const auto report = check_eviction_policy([](std::uint64_t) -> std::unique_ptr<EvictionPolicy> {
    throw std::runtime_error("out of ideas");
  });
  CHECK_FALSE(report.passed());
  CHECK_THAT(report.find("capacity")->reason,
             Catch::Matchers::Contains("request 1: the policy threw: out of ideas"));
}

TEST_CASE("inferscale policy check passes the example plugins") {
  for (const char* plugin : {INFERSCALE_EXAMPLE_POLICY, INFERSCALE_TEST_PLUGIN_furthest_next,
                             INFERSCALE_TEST_PLUGIN_idle_user}) {
    INFO(plugin);
    const auto r = policy_check(plugin);
    CHECK(r.status == 0);
    for (const char* line : {"PASS  capacity: ", "PASS  pins: ", "PASS  side-effect-free victim: ",
                             "PASS  determinism: ", "all properties hold"}) {
      CHECK_THAT(r.output, Catch::Matchers::Contains(line));
    }
  }
  const auto with_param = policy_check(std::string(INFERSCALE_EXAMPLE_POLICY) +
                                       " --param recent_ms=5 --sequences 2 --seed 9");
  CHECK(with_param.status == 0);
}

TEST_CASE("inferscale policy check catches broken plugins: status 1, the property, the reason") {
  const auto bad = policy_check(INFERSCALE_TEST_PLUGIN_bad_victim);
  CHECK(bad.status == 1);
  CHECK_THAT(bad.output, Catch::Matchers::Contains("FAIL  capacity: sequence 1, request "));
  CHECK_THAT(bad.output, Catch::Matchers::Contains(
                             ": victim() returned fact 123456789, which is not resident"));
  CHECK_THAT(bad.output, Catch::Matchers::Contains("some properties fail"));

  const auto pinned = policy_check(INFERSCALE_TEST_PLUGIN_pinned_victim);
  CHECK(pinned.status == 1);
  CHECK_THAT(pinned.output, Catch::Matchers::Contains("FAIL  pins: sequence 1, request "));
  CHECK_THAT(pinned.output, Catch::Matchers::Contains(", pinned by a running request"));

  const auto impure = policy_check(INFERSCALE_TEST_PLUGIN_impure_victim);
  CHECK(impure.status == 1);
  CHECK_THAT(impure.output, Catch::Matchers::Contains("FAIL  side-effect-free victim: "));
  CHECK_THAT(impure.output, Catch::Matchers::Contains("PASS  pins: "));
}

TEST_CASE("inferscale policy check rejects bad input with status 2") {
  const auto missing = policy_check("/nonexistent/libpolicy.so");
  CHECK(missing.status == 2);
  CHECK_THAT(missing.output, Catch::Matchers::Contains("not found"));
  const auto old = policy_check(INFERSCALE_TEST_PLUGIN_old_version);
  CHECK(old.status == 2);
  CHECK_THAT(old.output,
             Catch::Matchers::Contains("has policy ABI version 1, this build supports 2"));
  const auto refused = policy_check(std::string(INFERSCALE_EXAMPLE_POLICY) + " --param colour=red");
  CHECK(refused.status == 2);
  CHECK_THAT(refused.output, Catch::Matchers::Contains("unknown parameter 'colour'"));
  CHECK(policy_check("").status == 2);  // no plugin given
}
