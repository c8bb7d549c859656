// The CI recipes' profiles built into the binary, as a pipeline uses them:
// listed, printed to adapt, and run as recipe:NAME with the recipes' service
// contract (PERFGATE_SERVICE_COMMAND started in PERFGATE_CANDIDATE_DIR on PORT).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;

TEST(RecipeCliTest, ListsThemAndPrintsEachAsItsFile) {
  auto list = testing::run_command({testing::perfgate_binary(), "recipe"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(list.out, "recipe:default-branch\nrecipe:pr-paired\n");
  for (const char* name : {"default-branch", "pr-paired"}) {
    auto shown = testing::run_command({testing::perfgate_binary(), "recipe", name});
    ASSERT_EQ(shown.exit_code, 0) << shown.err;
    EXPECT_EQ(shown.out, testing::read_file(testing::source_dir() / "ci/profiles" /
                                            (std::string(name) + ".json")));
  }
}

TEST(RecipeCliTest, AnUnknownRecipeIsOneErrorLine) {
  for (std::vector<std::string> args : {std::vector<std::string>{"recipe", "hello"},
                                        std::vector<std::string>{"validate", "recipe:hello"},
                                        std::vector<std::string>{"run", "recipe:hello"}}) {
    args.insert(args.begin(), testing::perfgate_binary());
    auto r = testing::run_command(args);
    EXPECT_EQ(r.exit_code, 3) << args[1];
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("no such recipe; perfgate has default-branch, pr-paired"),
              std::string::npos)
        << r.err;
  }
}

// The default-branch recipe as the CI templates run it: perfgate starts the
// user's service in the checkout on the recipe's port and measures it.
TEST(RecipeCliTest, RunsTheDefaultBranchRecipeWithTheServiceContract) {
  testing::TempDir dir;
  auto json = dir / "result.json";
  auto port = std::to_string(testing::unused_port());
  auto r = testing::run_command(
      {testing::perfgate_binary(), "run", "recipe:default-branch", "--store",
       (dir / "perfgate.db").string(), "--json", json.string()},
      {{"PERFGATE_SERVICE_COMMAND",
        "exec '" + testing::perfgate_binary() + "' demo-server --port \"$PORT\" --delay 1ms"},
       {"PERFGATE_CANDIDATE_DIR", dir.path().string()},
       {"PERFGATE_CANDIDATE_PORT", port}},
      dir.path(), 60);
  // A first run: no baseline yet; a busy machine may call it saturated (warn).
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.err;
  auto result = nlohmann::json::parse(testing::read_file(json));
  EXPECT_EQ(result["profile"]["name"], "default-branch");
  EXPECT_EQ(result["profile"]["source"], "recipe:default-branch");
  EXPECT_EQ(result["target_url"], "http://127.0.0.1:" + port + "/");
  EXPECT_GT(result["metrics"]["throughput_rps"]["value"].get<double>(), 0);
  EXPECT_NE(r.out.find("recipe:default-branch"), std::string::npos) << r.out;
  auto valid = testing::validate_result_json(json);
  EXPECT_EQ(valid.exit_code, 0) << valid.out << valid.err;
}

}  // namespace
}  // namespace perfgate
