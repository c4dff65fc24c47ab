// `inferscale policies`: the registered admission and eviction policies.
// `inferscale policy check PLUGIN.so`: an out-of-tree policy against the property tests.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "policies/policy_check.h"
#include "policies/registry.h"

namespace inferscale::cli {

namespace {

template <class Info>
void print_table(const char* title, std::vector<Info> table) {
  std::sort(table.begin(), table.end(),
            [](const Info& a, const Info& b) { return a.name < b.name; });
  std::printf("%s\n", title);
  for (const auto& p : table) {
    std::printf("  %-16s %s%s\n", p.name.c_str(), p.description.c_str(),
                p.offline ? " [offline: reads the trace's future]" : "");
    for (const auto& param : p.params) {
      std::printf("  %-16s   %s (default %s): %s\n", "", param.name.c_str(),
                  param.default_value.c_str(), param.description.c_str());
    }
  }
}

struct CheckOptions {
  std::string plugin;
  std::vector<std::string> params;  // KEY=VALUE
  PolicyCheckOptions check;
};

/// Loads the plugin once (a bad library or parameter is an InputError: status 2), then runs the
/// properties; 0 when all pass, 1 otherwise.
int run_check(const CheckOptions& o) {
  Params params("--param");
  params.set("path", o.plugin, "PLUGIN '" + o.plugin + "'");
  for (const auto& item : o.params) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw InputError("--param '" + item + "'", "expected KEY=VALUE");
    }
    params.set(item.substr(0, eq), item.substr(eq + 1), "--param " + item.substr(0, eq));
  }
  // plugin_offline: the check knows each sequence's future, so offline plugins run too.
  const auto make = [&](std::uint64_t capacity_bytes) {
    PolicyArgs args{params, capacity_bytes, o.check.seed};
    return PolicyRegistry::make_eviction("plugin_offline", args, "PLUGIN");
  };
  make(1000);
  std::printf("policy check: %s (%zu sequences of %zu requests over %zu facts, seed %llu)\n",
              o.plugin.c_str(), o.check.sequences, o.check.requests, o.check.facts,
              static_cast<unsigned long long>(o.check.seed));
  const PolicyCheckReport report = check_eviction_policy(make, o.check);
  for (const auto& p : report.properties) {
    std::printf("%s  %s: %s\n", p.passed ? "PASS" : "FAIL", p.name.c_str(),
                p.passed ? p.description.c_str() : p.reason.c_str());
  }
  std::printf("%s\n", report.passed() ? "all properties hold" : "some properties fail");
  return report.passed() ? 0 : 1;
}

}  // namespace

CLI::App* policy_group(CLI::App& app) {
  for (auto* sub : app.get_subcommands([](CLI::App* s) { return s->get_name() == "policy"; })) {
    return sub;
  }
  auto* policy = app.add_subcommand("policy", "Study eviction and admission policies");
  policy->require_subcommand(1);
  return policy;
}

void add_policy_commands(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("policies", "List eviction and admission policies");
  cmd->callback([&action] {
    action = [] {
      print_table("eviction policies (store.<tier>.eviction):", PolicyRegistry::eviction());
      std::printf("\n");
      print_table("admission policies (store.<tier>.admission):", PolicyRegistry::admission());
      return 0;
    };
  });

  auto* check = policy_group(app)->add_subcommand(
      "check",
      "Run the property tests on an out-of-tree eviction policy (a shared library built against "
      "policies/plugin.h): capacity, pins, side-effect-free victim(), determinism. Exit status 0 "
      "when all hold, 1 when one fails, 2 for bad input");
  auto o = std::make_shared<CheckOptions>();
  check->add_option("plugin", o->plugin, "The policy's shared library")->required();
  check->add_option("--param", o->params,
                    "A parameter passed to the plugin's create(), KEY=VALUE (repeatable)");
  check->add_option("--seed", o->check.seed, "Seed of the generated sequences and the policy")
      ->capture_default_str();
  check->add_option("--sequences", o->check.sequences, "Generated access sequences")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  check->add_option("--requests", o->check.requests, "Requests per sequence")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  check->add_option("--facts", o->check.facts, "Facts per sequence")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  check->callback([&action, o] { action = [o] { return run_check(*o); }; });
}

}  // namespace inferscale::cli
