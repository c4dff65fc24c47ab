// `inferscale policies`: the registered admission and eviction policies.
#include <algorithm>
#include <cstdio>

#include "policies/registry.h"
#include "cli/commands.h"

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

}  // namespace

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
}

}  // namespace inferscale::cli
