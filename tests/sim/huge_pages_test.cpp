// `run` executes itself again with glibc's transparent-huge-page tunable (cli/main.cpp): the run
// it then makes is the one it would have made, whether the tunable is added, added to tunables
// of the user's own, or turned off.
#include <filesystem>
#include <string>

#include "tests/catch.h"
#include "tests/sim/sim_test_util.h"

namespace fs = std::filesystem;
using namespace inferscale::test;

TEST_CASE("a run with the huge-page tunable added is the run without it") {
  const auto dir = temp_dir("huge_pages");
  const std::string config =
      write_text(dir / "e.yaml",
                 "experiment: e\nseed: 5\nmodel: llama-3.1-8b\ngpu: h200\nreplicas: 4\n"
                 "trace: {generate: {users: 200, requests: 800, k: 20, rate: 40}}\n"
                 "serving: {k: 20, mode: kv_inject}\n"
                 "store: {warm: false, gpu: {capacity: 2%}, host: {capacity: 4GB}}\n"
                 "output: {requests_csv: true}\n");
  const auto csv = [&](const std::string& name, const std::string& env) {
    const fs::path out = dir / name;
    REQUIRE(run_cli("run " + config + " --out " + out.string() + " --no-progress",
                    dir / (name + ".log"), env) == 0);
    return read_text(out / "e" / "default" / "requests.csv");
  };
  const std::string off = csv("off", "INFERSCALE_HUGE_PAGES=0");
  CHECK(off.size() > 10000);
  CHECK(csv("added", "") == off);
  CHECK(csv("beside_users", "GLIBC_TUNABLES=glibc.malloc.perturb=0") == off);
  CHECK(csv("named", "GLIBC_TUNABLES=glibc.malloc.hugetlb=0") == off);
}
