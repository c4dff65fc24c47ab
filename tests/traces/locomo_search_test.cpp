// Where the LoCoMo importer finds its data: the folder given, else $INFERSCALE_LOCOMO, else the
// repository's data/locomo10/, else ../shared/data/locomo10 beside it; and what it says when
// there is none.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/catch.h"
#include "tests/traces/locomo_fixture.h"
#include "traces/error.h"
#include "traces/locomo.h"

using namespace inferscale;
namespace fs = std::filesystem;

namespace {

/// A fresh folder laid out as <root>/repo (the source tree) and <root>/shared/data/locomo10.
fs::path fresh_root(const std::string& name) {
  const auto root =
      fs::temp_directory_path() / ("inferscale_locomo_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "repo");
  return root;
}

/// `dir` with a locomo10.json holding the two test conversations.
std::string put_locomo(const fs::path& dir) {
  fs::create_directories(dir);
  std::ofstream(dir / "locomo10.json") << test::kTwoConversations;
  return dir.string();
}

std::string error_of(const LocomoSearch& s) {
  try {
    find_locomo(s, "--data");
  } catch (const InputError& e) {
    CHECK(e.where() == "--data");
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE(
    "LoCoMo is found in the folder given, the environment, the repository, the shared folder") {
  const auto root = fresh_root("order");
  const auto given = put_locomo(root / "given");
  const auto env = put_locomo(root / "env");
  const auto repo_data = put_locomo(root / "repo" / "data" / "locomo10");
  const auto shared = put_locomo(root / "shared" / "data" / "locomo10");
  const std::string repo = (root / "repo").string();

  CHECK(find_locomo({given, env, repo}, "--data") == given);
  CHECK(find_locomo({"", env, repo}, "--data") == env);
  CHECK(find_locomo({"", "", repo}, "--data") == repo_data);
  fs::remove_all(repo_data);
  CHECK(find_locomo({"", "", repo}, "--data") == repo + "/../shared/data/locomo10");
  // A file is a place too (one locomo10.json), and the data found loads.
  CHECK(find_locomo({given + "/locomo10.json", "", repo}, "--data") == given + "/locomo10.json");
  CHECK(load_locomo(find_locomo({"", "", repo}, "--data")).conversations.size() == 2);
  (void)shared;
}

TEST_CASE("a folder of per-conversation files is found and read as before") {
  const auto root = fresh_root("layout");
  const auto dir = root / "conversations";
  fs::create_directories(dir);
  std::ofstream(dir / "README.md") << "not data";
  CHECK(error_of({dir.string(), "", (root / "repo").string()}).find("LoCoMo data not found") !=
        std::string::npos);
  // The two conversations as one file each: the layout of the shared data folder.
  const std::string all = test::kTwoConversations;
  const auto second = all.find("\n{\"sample_id\": \"Y\"");
  REQUIRE(second != std::string::npos);
  std::ofstream(dir / "X.json") << all.substr(1, all.rfind(',', second) - 1);
  std::ofstream(dir / "Y.json") << all.substr(second + 1, all.rfind(']') - second - 1);
  const auto found = find_locomo({dir.string(), "", (root / "repo").string()}, "--data");
  CHECK(found == dir.string());
  const auto data = load_locomo(found);
  REQUIRE(data.conversations.size() == 2);
  CHECK(data.conversations[0].id == "X");
  CHECK(data.conversations[1].id == "Y");
}

TEST_CASE("a place that is named is used alone") {
  const auto root = fresh_root("named");
  put_locomo(root / "repo" / "data" / "locomo10");
  const std::string repo = (root / "repo").string();
  const std::string missing = (root / "missing").string();
  const auto given_err = error_of({missing, "", repo});
  INFO(given_err);
  CHECK(given_err.find("1. " + missing + " (the folder given, used alone)") != std::string::npos);
  const auto env_err = error_of({"", missing, repo});
  INFO(env_err);
  CHECK(env_err.find("1. " + missing + " ($INFERSCALE_LOCOMO, used alone)") != std::string::npos);
}

TEST_CASE("no LoCoMo anywhere: the error says what it is and where to put it") {
  const auto root = fresh_root("none");
  const std::string repo = (root / "repo").string();
  const auto err = error_of({"", "", repo});
  INFO(err);
  CHECK(err.rfind("--data: LoCoMo data not found.", 0) == 0);
  for (const char* part :
       {"\"Evaluating Very Long-Term Conversational Memory of LLM Agents\", 2024",
        "10 long multi-session conversations with QA annotations", "CC BY-NC 4.0",
        "GitHub repository snap-research/locomo", "data/locomo10.json", "Put locomo10.json",
        "INFERSCALE_LOCOMO=DIR", "--data DIR"}) {
    CHECK(err.find(part) != std::string::npos);
  }
  const auto first = err.find("1. " + repo + "/data/locomo10");
  const auto second = err.find("2. " + repo + "/../shared/data/locomo10");
  CHECK(first != std::string::npos);
  CHECK(second != std::string::npos);
  CHECK(first < second);
}

TEST_CASE("the search of this process reads INFERSCALE_LOCOMO and the source tree") {
  ::setenv("INFERSCALE_LOCOMO", "/somewhere/locomo", 1);
  const auto s = locomo_search("given");
  ::unsetenv("INFERSCALE_LOCOMO");
  CHECK(s.given == "given");
  CHECK(s.env == "/somewhere/locomo");
  CHECK(s.repository == INFERSCALE_SOURCE_DIR);
  CHECK(locomo_search("").env.empty());
}
