#include "perfgate/profile/ci_context.h"

#include <gtest/gtest.h>

#include <map>

#include "perfgate/core/error.h"

namespace perfgate {
namespace {

EnvLookup fake_env(std::map<std::string, std::string> vars) {
  return [vars](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(CiContextTest, GithubPullRequest) {
  auto ci = read_ci_context({}, fake_env({{"GITHUB_ACTIONS", "true"},
                                          {"GITHUB_SHA", "abc123"},
                                          {"GITHUB_REF_NAME", "42/merge"},
                                          {"GITHUB_HEAD_REF", "feature/x"},
                                          {"GITHUB_BASE_REF", "main"},
                                          {"GITHUB_RUN_ID", "777"},
                                          {"GITHUB_STEP_SUMMARY", "/tmp/summary.md"}}));
  EXPECT_EQ(ci.provider, "github");
  EXPECT_EQ(ci.commit, "abc123");
  EXPECT_EQ(ci.branch, "feature/x");
  EXPECT_EQ(ci.baseline_branch, "main");
  EXPECT_EQ(ci.pipeline_id, "777");
  EXPECT_EQ(ci.summary_path, "/tmp/summary.md");
}

TEST(CiContextTest, GithubPushComparesWithItsOwnBranch) {
  auto ci = read_ci_context(
      {},
      fake_env({{"GITHUB_REF_NAME", "main"}, {"GITHUB_HEAD_REF", ""}, {"GITHUB_BASE_REF", ""}}));
  EXPECT_EQ(ci.branch, "main");
  EXPECT_EQ(ci.baseline_branch, "main");
}

TEST(CiContextTest, GitlabMergeRequestThenDefaultBranch) {
  std::map<std::string, std::string> vars = {
      {"GITLAB_CI", "true"},           {"CI_COMMIT_SHA", "def456"},
      {"CI_COMMIT_REF_NAME", "topic"}, {"CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "release"},
      {"CI_DEFAULT_BRANCH", "main"},   {"CI_PIPELINE_ID", "99"}};
  auto ci = read_ci_context({}, fake_env(vars));
  EXPECT_EQ(ci.provider, "gitlab");
  EXPECT_EQ(ci.baseline_branch, "release");
  vars.erase("CI_MERGE_REQUEST_TARGET_BRANCH_NAME");
  EXPECT_EQ(read_ci_context({}, fake_env(vars)).baseline_branch, "main");
}

TEST(CiContextTest, FlagsWinOverEnvironment) {
  CiOverrides flags{"f00d", "mine", "trunk"};
  auto ci = read_ci_context(flags, fake_env({{"CI_COMMIT_SHA", "def456"},
                                             {"CI_COMMIT_REF_NAME", "topic"},
                                             {"CI_DEFAULT_BRANCH", "main"}}));
  EXPECT_EQ(ci.commit, "f00d");
  EXPECT_EQ(ci.branch, "mine");
  EXPECT_EQ(ci.baseline_branch, "trunk");
}

// A merge queue's run is a change that merges next: judged, never a baseline
// of its own; its baseline is the queue's target, read from its branch's name.
TEST(CiContextTest, GithubMergeQueueIsAChangeRequestAgainstItsTarget) {
  auto ci = read_ci_context(
      {}, fake_env({{"GITHUB_ACTIONS", "true"},
                    {"GITHUB_EVENT_NAME", "merge_group"},
                    {"GITHUB_REF_NAME", "gh-readonly-queue/release/1/pr-6-0123abcd"}}));
  EXPECT_TRUE(ci.change_request);
  EXPECT_EQ(ci.change_kind, "merge queue run");
  EXPECT_EQ(ci.baseline_branch, "release/1");
  auto flagged = read_ci_context({"", "", "main"}, fake_env({{"GITHUB_EVENT_NAME", "merge_group"},
                                                             {"GITHUB_REF_NAME", "odd-name"}}));
  EXPECT_EQ(flagged.baseline_branch, "main");
  EXPECT_TRUE(flagged.change_request);
}

TEST(CiContextTest, OnlyChangesAreChangeRequests) {
  for (const char* event : {"push", "schedule", "workflow_dispatch"}) {
    auto ci = read_ci_context({}, fake_env({{"GITHUB_EVENT_NAME", event}}));
    EXPECT_FALSE(ci.change_request) << event;
    EXPECT_EQ(ci.change_kind, "") << event;
  }
  EXPECT_EQ(read_ci_context({}, fake_env({{"GITHUB_EVENT_NAME", "pull_request"}})).change_kind,
            "pull request");
  EXPECT_EQ(read_ci_context({}, fake_env({{"CI_MERGE_REQUEST_IID", "3"}})).change_kind,
            "merge request");
  // GitLab's branch pipeline of a branch with an open merge request gates that
  // merge request when the project runs no merge request pipelines.
  EXPECT_TRUE(
      read_ci_context({}, fake_env({{"CI_OPEN_MERGE_REQUESTS", "group/p!1"}})).change_request);
}

TEST(CiContextTest, LocalRunWithoutAnything) {
  auto ci = read_ci_context({}, fake_env({}));
  EXPECT_EQ(ci.provider, "local");
  EXPECT_EQ(ci.branch, "");
  EXPECT_EQ(ci.baseline_branch, "");
}

// Issue 41, item 12: a 2 KiB branch was stored and exported, and the import
// refused the whole file. The store's import limits hold at the run too.
TEST(CiContextTest, ATextLongerThanAStoredRunHoldsIsRefused) {
  CiOverrides flags;
  flags.branch = std::string(2048, 'b');
  try {
    read_ci_context(flags, fake_env({}));
    ADD_FAILURE() << "read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("branch (--branch, "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(": 2048 bytes; a stored run holds at most 1 KiB there"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(read_ci_context({}, fake_env({{"GITHUB_SHA", std::string(4096, 'c')}})), Error);
  flags.branch = std::string(1024, 'b');
  EXPECT_EQ(read_ci_context(flags, fake_env({})).branch.size(), 1024u);
}

}  // namespace
}  // namespace perfgate
