// A run's results folder: locked while a run writes it, written under a temporary folder of the
// process, moved into place in one step; SIGINT/SIGTERM remove what an interrupted run, trace
// generation or trace conversion had written.
#include "sim/run_folder.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "sim/config/experiment.h"
#include "sim/trace_source.h"
#include "tests/catch.h"
#include "tests/file_size_limit.h"
#include "tests/sim/sim_test_util.h"
#include "traces/error.h"

extern char** environ;

using namespace inferscale;
using namespace inferscale::test;
namespace fs = std::filesystem;

namespace {

/// Names in `dir` that a finished or interrupted run must not leave: temporary folders and
/// files, set-aside old results, locks.
std::vector<std::string> leftovers(const fs::path& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.find(".tmp") != std::string::npos || name.find(".old.") != std::string::npos ||
        name.ends_with(".lock")) {
      found.push_back(e.path().string());
    }
  }
  return found;
}

/// Starts the CLI with `args`, its stdout and stderr to `log`; returns its process id.
pid_t spawn_cli(const std::vector<std::string>& args, const fs::path& log) {
  const std::string bin = std::string(INFERSCALE_BINARY_DIR) + "/inferscale";
  std::vector<char*> argv{const_cast<char*>(bin.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, bin.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  REQUIRE(rc == 0);
  return pid;
}

/// Waits (a minute at most: a hang guard, not a timing expectation) until `ready` holds.
template <class F>
bool wait_until(F ready) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (std::chrono::steady_clock::now() < end) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

bool has_entry_starting(const fs::path& dir, const std::string& prefix) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("a results folder is locked while a run writes it, and the lock names its process") {
  const auto dir = temp_dir("run_folder_lock");
  const fs::path base = dir / "results" / "exp";
  {
    RunFolder a(base, "r", "c.yaml: output.dir");
    CHECK(a.tmp() == base / ("r.tmp." + std::to_string(::getpid())));
    CHECK(fs::is_directory(a.tmp()));
    std::string message;
    try {
      RunFolder b(base, "r", "c.yaml: output.dir");
    } catch (const InputError& e) {
      message = e.what();
    }
    INFO(message);
    CHECK(message.rfind("c.yaml: output.dir: the results folder '" + (base / "r").string() +
                            "' is being written by process " + std::to_string(::getpid()),
                        0) == 0);
    RunFolder other(base, "s", "c.yaml: output.dir");  // another run of the experiment: free
    write_text(a.tmp() / "summary.json", "new\n");
    a.commit(a.dir());
  }
  CHECK(read_text(base / "r" / "summary.json") == "new\n");
  CHECK(leftovers(dir).empty());
  {
    // The next run replaces the result in one step; the lock is free again.
    RunFolder a(base, "r", "c.yaml: output.dir");
    write_text(a.tmp() / "summary.json", "newer\n");
    a.commit(a.dir());
  }
  CHECK(read_text(base / "r" / "summary.json") == "newer\n");
  CHECK(leftovers(dir).empty());
  {
    // Dropped without a commit: nothing of it stays, not even the folders it made.
    RunFolder a(dir / "made" / "exp", "r", "c.yaml: output.dir");
    write_text(a.tmp() / "requests.csv", "x\n");
  }
  CHECK_FALSE(fs::exists(dir / "made"));
}

TEST_CASE("replace_path swaps a new result for an old one, files and folders") {
  const auto dir = temp_dir("replace_path");
  fs::create_directories(dir / "old");
  write_text(dir / "old" / "a.csv", "old\n");
  fs::create_directories(dir / "new");
  write_text(dir / "new" / "b.csv", "new\n");
  replace_path(dir / "new", dir / "old");
  CHECK_FALSE(fs::exists(dir / "new"));
  CHECK_FALSE(fs::exists(dir / "old" / "a.csv"));
  CHECK(read_text(dir / "old" / "b.csv") == "new\n");
  replace_path(dir / "old", dir / "fresh");  // nothing to replace
  CHECK(read_text(dir / "fresh" / "b.csv") == "new\n");
  CHECK(leftovers(dir).empty());
}

TEST_CASE("CLI: a second run of the same results is refused, and SIGINT leaves nothing partial") {
  // Before: both runs used <run>.tmp, the second removed the first's, and one of them renamed a
  // folder mixing the two runs' files; an interrupted run left <run>.tmp behind.
  const auto dir = temp_dir("two_runs");
  const std::string cfg = write_text(
      dir / "c.yaml",
      "experiment: e\nseed: 5\nmodel: llama-3.1-8b\ngpu: h200\n"
      "trace: {generate: {users: 50000, requests: 3000000, k: 20}}\n"
      "serving: {k: 20, mode: kv_inject}\nstore: {gpu: {capacity: 1%}}\n"
      "output: {dir: " + (dir / "results").string() + "}\n");
  const fs::path base = dir / "results" / "e";
  const pid_t first = spawn_cli({"run", cfg, "--no-progress"}, dir / "first.txt");
  REQUIRE(wait_until([&] { return has_entry_starting(base, "default.tmp"); }));
  const std::string cmd = std::string(INFERSCALE_BINARY_DIR) + "/inferscale run " + cfg +
                          " --no-progress > " + (dir / "second.txt").string() + " 2>&1";
  const int second = std::system(cmd.c_str());
  const std::string said = read_text(dir / "second.txt");
  INFO(said);
  REQUIRE(WIFEXITED(second));
  CHECK(WEXITSTATUS(second) == 2);
  CHECK(said.find("c.yaml: output.dir: the results folder '" + (base / "default").string() +
                  "' is being written by process " + std::to_string(first)) !=
        std::string::npos);
  CHECK(has_entry_starting(base, "default.tmp"));  // the first run's folder is untouched
  // SIGINT: the first run ends as interrupted, and its partial files go with it.
  REQUIRE(::kill(first, SIGINT) == 0);
  int status = 0;
  REQUIRE(::waitpid(first, &status, 0) == first);
  const std::string first_said = read_text(dir / "first.txt");
  INFO(first_said);
  CHECK(WIFSIGNALED(status));
  CHECK(first_said.find("interrupted: removing partial results:") != std::string::npos);
  CHECK(leftovers(dir / "results").empty());
  CHECK_FALSE(fs::exists(base / "default"));
}

TEST_CASE("CLI: trace generate interrupted by SIGTERM leaves no temporary trace") {
  const auto dir = temp_dir("generate_sigterm");
  const fs::path out = dir / "big.jsonl";
  const pid_t gen = spawn_cli({"trace", "generate", "--out", out.string(), "--users", "200000",
                               "--requests", "20000000"},
                              dir / "log.txt");
  REQUIRE(wait_until([&] { return has_entry_starting(dir, "big.jsonl."); }));
  REQUIRE(::kill(gen, SIGTERM) == 0);
  int status = 0;
  REQUIRE(::waitpid(gen, &status, 0) == gen);
  INFO(read_text(dir / "log.txt"));
  CHECK(WIFSIGNALED(status));
  CHECK(leftovers(dir).empty());
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("CLI: trace convert interrupted by SIGTERM leaves no temporary binary trace") {
  // Before: the binary writer's `<out>.tmp` was not registered, and SIGTERM left it behind.
  // The input is a FIFO that this test feeds, so the conversion waits for its next line for as
  // long as the test wants: no race with a conversion that ends first.
  const auto dir = temp_dir("convert_sigterm");
  const fs::path in = dir / "in.jsonl", out = dir / "out.bin";
  REQUIRE(::mkfifo(in.c_str(), 0600) == 0);
  const pid_t conv = spawn_cli({"trace", "convert", in.string(), out.string()}, dir / "log.txt");
  // The converter opens its input more than once (first to tell JSONL from binary): each opening
  // gets a fact line whenever it has read what it was given; a reader that closes is let go.
  struct sigaction ignore {};
  struct sigaction old {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &old);  // a write that meets a closed reader fails with EPIPE
  int fd = -1;
  std::uint64_t line = 0;
  const bool converting = wait_until([&] {
    if (has_entry_starting(dir, "out.bin.")) return true;
    if (fd < 0) fd = ::open(in.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);  // ENXIO: no reader
    if (fd < 0) return false;
    pollfd p{fd, 0, 0};
    if (::poll(&p, 1, 0) == 1 && (p.revents & POLLERR) != 0) {
      ::close(fd);
      fd = -1;
      return false;
    }
    int queued = 0;
    if (::ioctl(fd, FIONREAD, &queued) == 0 && queued == 0) {
      ++line;
      const std::string l = "{\"type\":\"fact\",\"id\":" + std::to_string(line) +
                            ",\"user\":1,\"tokens\":5,\"time\":0}\n";
      const ssize_t ignored = ::write(fd, l.data(), l.size());
      (void)ignored;
    }
    return false;
  });
  REQUIRE(::kill(conv, SIGTERM) == 0);
  int status = 0;
  REQUIRE(::waitpid(conv, &status, 0) == conv);
  if (fd >= 0) ::close(fd);
  ::sigaction(SIGPIPE, &old, nullptr);
  const std::string said = read_text(dir / "log.txt");
  INFO(said);
  REQUIRE(converting);  // its temporary file was there while it converted
  CHECK(WIFSIGNALED(status));
  CHECK(said.find("interrupted: removing partial results: " + out.string() + ".") !=
        std::string::npos);
  CHECK(leftovers(dir).empty());
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("CLI: an output.dir that cannot be made is an input error naming it") {
  // Before: std::filesystem threw, and the CLI said "internal error" with status 1.
  const auto dir = temp_dir("output_dir_file");
  const std::string file = write_text(dir / "a_file", "x\n");
  const std::string cfg = write_text(
      dir / "c.yaml", "experiment: e\ntrace: " + source_path("tests/sim/data/golden.jsonl") +
                          "\noutput: {dir: " + file + "}\n");
  const std::string cmd = std::string(INFERSCALE_BINARY_DIR) + "/inferscale run " + cfg +
                          " --no-progress > " + (dir / "out.txt").string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  const std::string said = read_text(dir / "out.txt");
  INFO(said);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
  CHECK(said.rfind("error: " + cfg + ": output.dir: cannot create the results folder '" + file +
                       "/e': ",
                   0) == 0);
  CHECK(read_text(dir / "a_file") == "x\n");
}

TEST_CASE("CLI: a read-only output.dir is an input error naming it, and nothing is written") {
  // A folder made read-only stops only unprivileged processes; tests may run as root, which
  // writes there anyway. Then the folder is one that refuses even root (/sys, then /proc), so
  // that the refusal this test is about happens either way.
  const auto dir = temp_dir("output_dir_read_only");
  const fs::path ro = dir / "ro";
  fs::create_directories(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                          fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  const std::string probe = "inferscale_probe_" + std::to_string(::getpid());
  const auto refuses = [&](const fs::path& p) {
    if (::mkdir((p / probe).c_str(), 0700) != 0) return true;
    ::rmdir((p / probe).c_str());
    return false;
  };
  fs::path target;
  for (const fs::path& p : {ro, fs::path("/sys"), fs::path("/proc")}) {
    if (refuses(p)) {
      target = p;
      break;
    }
  }
  INFO("output.dir: " << target);
  REQUIRE_FALSE(target.empty());  // no folder here refuses to be written: nothing to test with
  const std::string experiment = "inferscale_read_only_" + std::to_string(::getpid());
  const std::string cfg =
      write_text(dir / "c.yaml", "experiment: " + experiment +
                                     "\ntrace: " + source_path("tests/sim/data/golden.jsonl") +
                                     "\noutput: {dir: " + target.string() + "}\n");
  const int status = run_cli("run " + cfg + " --no-progress", dir / "out.txt");
  const std::string said = read_text(dir / "out.txt");
  INFO(said);
  CHECK(status == 2);
  CHECK(said.rfind("error: " + cfg + ": output.dir: cannot create the results folder '" +
                       (target / experiment).string() + "': ",
                   0) == 0);
  CHECK(said.find('\n') == said.size() - 1);  // one line
  CHECK_FALSE(fs::exists(target / experiment));
  CHECK(fs::is_empty(ro));
  fs::permissions(ro, fs::perms::owner_all);
}

TEST_CASE("CLI: a generated trace that does not fit leaves no empty folders") {
  // The run makes <output.dir>/<experiment>/.traces/ for the trace; a file-size limit stops
  // the trace's writes as a full disk would (EFBIG in place of ENOSPC). The folders the run
  // made must go with the failed trace: none of them existed before.
  const auto dir = temp_dir("trace_does_not_fit");
  const fs::path results = dir / "results";
  const std::string cfg = write_text(
      dir / "c.yaml",
      "experiment: e\ntrace: {generate: {users: 100, requests: 20000, write_trace: true}}\n"
      "output: {dir: " +
          (results / "deeper").string() + "}\n");
  // 64 blocks of 512 bytes: the lock file fits, the trace (megabytes) does not. SIGXFSZ is
  // ignored so that the write fails instead of ending the process.
  const std::string cmd = "trap '' XFSZ; ulimit -f 64 && exec " +
                          std::string(INFERSCALE_BINARY_DIR) + "/inferscale run " + cfg +
                          " --no-progress > " + (dir / "out.txt").string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  const std::string said = read_text(dir / "out.txt");
  INFO(said);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
  CHECK(said.rfind("error: ", 0) == 0);
  CHECK(said.find("write failed: File too large") != std::string::npos);
  CHECK_FALSE(fs::exists(results));
  CHECK(leftovers(dir).empty());
}

TEST_CASE("a generated trace that does not fit takes the folders made for it") {
  // materialize_trace makes the trace's folder and any missing above it (a plan's
  // <out>/<plan>/.traces/, made before any result); a trace that cannot be written must take
  // them all, not only the innermost. A file-size limit on this process stands for a full disk.
  const auto dir = temp_dir("materialize_does_not_fit");
  const ExperimentConfig exp = load_experiment(
      write_text(dir / "c.yaml",
                 "experiment: e\n"
                 "trace: {generate: {users: 100, requests: 20000, write_trace: true}}\n"),
      {});
  const fs::path top = dir / "out";
  std::string message;
  {
    test::FileSizeLimit limit(32 << 10);  // the trace is megabytes
    try {
      materialize_trace(exp.runs.at(0), (top / "plan" / ".traces").string());
    } catch (const InputError& e) {
      message = e.what();
    }
  }
  INFO(message);
  CHECK(message.find("write failed: File too large") != std::string::npos);
  CHECK_FALSE(fs::exists(top));
}
