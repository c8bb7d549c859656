#include "perfgate/profile/profile_recipe.h"

#include <gtest/gtest.h>

#include <map>

#include "perfgate/core/error.h"
#include "perfgate/profile/profile.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

std::filesystem::path recipe_file(std::string_view name) {
  return std::filesystem::path(PERFGATE_SOURCE_DIR) / "ci/profiles" / (std::string(name) + ".json");
}

EnvLookup recipe_env() {
  std::map<std::string, std::string> vars = {{"PERFGATE_SERVICE_COMMAND", "exec ./server"},
                                             {"PERFGATE", "/usr/bin/perfgate"},
                                             {"PERFGATE_BASELINE_DIR", "/tmp/base"}};
  return [vars](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(ProfileRecipe, EachIsItsFileInCiProfilesByteForByte) {
  ASSERT_EQ(profile_recipes().size(), 4u);
  for (const auto& recipe : profile_recipes())
    EXPECT_EQ(recipe.text, testing::read_file(recipe_file(recipe.name))) << recipe.name;
}

TEST(ProfileRecipe, FindsByNameWithoutThePrefix) {
  ASSERT_TRUE(find_recipe("pr-paired"));
  EXPECT_EQ(find_recipe("pr-paired")->name, "pr-paired");
  EXPECT_FALSE(find_recipe("recipe:pr-paired"));
  EXPECT_FALSE(find_recipe("hello"));
  EXPECT_EQ(recipe_names(), "default-branch, hello-paired, hello-sharded, pr-paired");
}

TEST(ProfileRecipe, LoadsAsTheFileDoesWithTheSameHash) {
  for (std::string name : {"default-branch", "hello-paired", "hello-sharded", "pr-paired"}) {
    Profile built_in = load_profile("recipe:" + name, recipe_env());
    Profile file = load_profile(recipe_file(name), recipe_env());
    EXPECT_EQ(built_in.hash, file.hash) << name;
    EXPECT_EQ(built_in.name, name);
    EXPECT_EQ(built_in.source, "recipe:" + name);
  }
}

TEST(ProfileRecipe, AnUnknownRecipeNamesTheKnownOnes) {
  try {
    load_profile("recipe:hello", recipe_env());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "recipe:hello: no such recipe; perfgate has default-branch, hello-paired, hello-sharded, "
        "pr-paired "
        "(a file named so needs ./ in front)");
  }
}

TEST(ProfileRecipe, ProblemsNameTheRecipeAndLine) {
  try {
    load_profile("recipe:pr-paired", [](std::string_view) { return std::nullopt; });
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("recipe:pr-paired:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("PERFGATE_SERVICE_COMMAND"), std::string::npos);
  }
}

}  // namespace
}  // namespace perfgate
