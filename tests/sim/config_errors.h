#pragma once
// A table of bad configs and the errors they must give: the tests of each config area list
// their cases and check them alike.

#include <string>
#include <vector>

#include "tests/catch.h"

namespace inferscale::test {

struct ConfigErrorCase {
  const char* name;
  std::string yaml;
  const char* position;  // ":line:column: key.path" in the file c.yaml
  const char* message;
};

/// Each case in a SECTION of its name: `error_of(name, yaml)` (the error the config c.yaml
/// gives) names the position and holds the message.
template <class ErrorOf>
void check_config_errors(const std::vector<ConfigErrorCase>& cases, ErrorOf error_of) {
  for (const auto& c : cases) {
    SECTION(c.name) {
      const std::string err = error_of(c.name, c.yaml);
      INFO(err);
      CHECK(err.find("c.yaml" + std::string(c.position)) != std::string::npos);
      CHECK(err.find(c.message) != std::string::npos);
    }
  }
}

}  // namespace inferscale::test
