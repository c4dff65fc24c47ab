// The registry of optional command groups (see commands.h).
#include "cli/commands.h"

namespace inferscale::cli {

std::vector<CommandGroup>& command_groups() {
  static std::vector<CommandGroup> groups;  // function-local: safe from static-init order
  return groups;
}

bool register_command_group(CommandGroup group) {
  command_groups().push_back(group);
  return true;
}

}  // namespace inferscale::cli
