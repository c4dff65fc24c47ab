// The progress line: phases with their own counts and rates, the last figures of a phase kept
// when the next begins, nothing before its delay or when off.
#include "sim/progress.h"

#include <cstdio>
#include <string>

#include "tests/catch.h"

using namespace inferscale;
using std::chrono::milliseconds;

namespace {

/// What `write` printed through a Progress on a temporary file.
template <class Write>
std::string printed(bool enabled, milliseconds after, Write write) {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  {
    Progress p(enabled, "results/x.tmp", f, after);
    write(p);
  }
  std::rewind(f);
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  std::fclose(f);
  return out;
}

}  // namespace

TEST_CASE("a progress line names its phase, its count and the simulated time") {
  const std::string out = printed(true, milliseconds(0), [](Progress& p) {
    p.phase("warm start", "facts");
    p.update(0.25, 1000);
    p.update(0.30, 1200);  // within a quarter second: not drawn now
    p.phase("simulation", "requests");
    p.update(0.5, 10, 2'000'000'000);
    p.phase("writing results", nullptr);
    p.finish();
  });
  INFO(out);
  CHECK(out.rfind("writing results/x.tmp/ (removed if the run is interrupted)\n", 0) == 0);
  CHECK(out.find("  25.0%  warm start  1000 facts  ") != std::string::npos);
  // The warm start's line ends with its last figures, before the next phase.
  const auto last_warm = out.find("  30.0%  warm start  1200 facts  ");
  const auto first_sim = out.find("simulation");
  REQUIRE(last_warm != std::string::npos);
  REQUIRE(first_sim != std::string::npos);
  CHECK(last_warm < first_sim);
  CHECK(out.find('\n', last_warm) < first_sim);
  CHECK(out.find("  50.0%  simulation  10 requests  sim 2.00 s  ") != std::string::npos);
  CHECK(out.find("requests/s  RSS ") != std::string::npos);
  // A phase without a unit shows no count; the line ends at finish.
  CHECK(out.find("  50.0%  writing results  RSS ") != std::string::npos);
  CHECK(out.back() == '\n');
}

TEST_CASE("a progress line shows nothing when off, or before its delay") {
  auto work = [](Progress& p) {
    p.phase("simulation", "requests");
    p.update(0.5, 10, 0);
    p.phase("writing results", nullptr);
    p.finish();
  };
  CHECK(printed(false, milliseconds(0), work).empty());
  CHECK(printed(true, milliseconds(3'600'000), work).empty());
}

TEST_CASE("a progress line keeps the latest simulated time of its phase") {
  const std::string out = printed(true, milliseconds(0), [](Progress& p) {
    p.phase("simulation", "requests");
    p.update(0.5, 10, 2'000'000'000);
    p.update(0.6, 11, 0);  // a fact declared when its user first asks is a record at t = 0
    p.finish();
  });
  INFO(out);
  CHECK(out.find("  60.0%  simulation  11 requests  sim 2.00 s  ") != std::string::npos);
}
