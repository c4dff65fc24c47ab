// The YAML experiment loader: any input is loaded and validated; an InputError (a positioned,
// one-line error) is the expected outcome for bad input, anything else a finding. A line
// "#--set KEY=VALUE" adds a --set override. Inputs that name paths ('/') are skipped: a
// config may name any file (/dev/zero as a model), which is the user's choice, not a bug.
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/fuzz_input_file.h"
#include "sim/config/experiment.h"
#include "sim/runner.h"
#include "traces/error.h"

using namespace inferscale;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (text.find('/') != std::string::npos || size > 8192) return -1;  // not kept in the corpus
  std::vector<std::string> sets;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("#--set ", 0) == 0) sets.push_back(line.substr(7));
  }
  const std::string path = fuzz::input_file(".yaml", data, size);
  try {
    validate_experiment(load_experiment(path, sets));
  } catch (const InputError&) {
  }
  return 0;
}
