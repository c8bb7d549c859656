// The real binary under GitHub's and GitLab's variables: a pull or merge
// request with no comparable baseline warns instead of passing unjudged
// (unless --no-baseline=pass), a default-branch run still becomes the
// baseline, and the step summary is written even when --summary is given.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace perfgate {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::CommandResult;
using testing::DemoServerProcess;
using testing::TempDir;

// Short, and lenient: these tests are about the missing baseline, never about
// a change a busy machine could make.
constexpr const char* kProfile = R"({
  "name": "ci-verdict",
  "target": { "url": "http://127.0.0.1:${TARGET_PORT}/" },
  "load": { "threads": 1, "connections": 2, "duration": "500ms", "warmup": "0s" },
  "repeat": { "count": 2, "discard": 0 },
  "thresholds": { "throughput": { "warn": "90%", "fail": "99%" } },
  "saturation": { "foreign_cpu": "100%", "generator_cpu": "100%", "cpu_pressure": "100%",
                  "steal": "100%", "memory_available": "0%" }
})";

using Env = std::map<std::string, std::string>;

const Env kGithubPullRequest = {{"GITHUB_ACTIONS", "true"},
                                {"GITHUB_EVENT_NAME", "pull_request"},
                                {"GITHUB_REF_NAME", "7/merge"},
                                {"GITHUB_HEAD_REF", "feature"},
                                {"GITHUB_BASE_REF", "main"}};
const Env kGithubPush = {
    {"GITHUB_ACTIONS", "true"}, {"GITHUB_EVENT_NAME", "push"}, {"GITHUB_REF_NAME", "main"}};
const Env kGitlabMergeRequest = {{"GITLAB_CI", "true"},
                                 {"CI_MERGE_REQUEST_IID", "12"},
                                 {"CI_COMMIT_REF_NAME", "feature"},
                                 {"CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "main"},
                                 {"CI_DEFAULT_BRANCH", "main"}};

class CiVerdictCliTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::write_file(dir_ / "profile.json", kProfile); }

  CommandResult run(Env env, std::vector<std::string> extra = {}) {
    env["TARGET_PORT"] = std::to_string(server_.port());
    // The job's own CI variables must not leak into these runs.
    for (const char* name :
         {"GITHUB_ACTIONS", "GITHUB_EVENT_NAME", "GITHUB_REF_NAME", "GITHUB_HEAD_REF",
          "GITHUB_BASE_REF", "GITHUB_STEP_SUMMARY", "GITLAB_CI", "CI_MERGE_REQUEST_IID",
          "CI_COMMIT_REF_NAME", "CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "CI_DEFAULT_BRANCH",
          "CI_OPEN_MERGE_REQUESTS"})
      env.try_emplace(name, "");
    std::vector<std::string> args = {
        testing::perfgate_binary(),      "run",    (dir_ / "profile.json").string(), "--store",
        (dir_ / "perfgate.db").string(), "--json", (dir_ / "result.json").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::run_command(args, env);
  }

  json result() { return json::parse(testing::read_file(dir_ / "result.json")); }

  bool has_note(const std::string& text) {
    json notes = result()["notes"];  // a copy: the loop must not outlive result()'s value
    for (const auto& note : notes)
      if (note.get<std::string>().find(text) != std::string::npos) return true;
    return false;
  }

  TempDir dir_;
  DemoServerProcess server_;
};

TEST_F(CiVerdictCliTest, GithubPullRequestWithoutBaselineWarns) {
  auto r = run(kGithubPullRequest);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(result()["verdict"], "warn");
  EXPECT_TRUE(has_note("no comparable baseline on branch main")) << result()["notes"];
  EXPECT_TRUE(has_note("--no-baseline=pass"));
  EXPECT_FALSE(has_note("this run becomes the baseline"));
  EXPECT_NE(r.out.find("no comparable baseline"), std::string::npos) << r.out;
}

TEST_F(CiVerdictCliTest, PullRequestTargetEventCountsAsAPullRequest) {
  auto env = kGithubPullRequest;
  env["GITHUB_EVENT_NAME"] = "pull_request_target";
  EXPECT_EQ(run(env).exit_code, 2);
}

// A merge queue's run merges next: with no comparable baseline (a hosted
// runner's new CPU model) it warns like a pull request, and never becomes a baseline.
TEST_F(CiVerdictCliTest, GithubMergeQueueWithoutBaselineWarns) {
  Env queue = {{"GITHUB_ACTIONS", "true"},
               {"GITHUB_EVENT_NAME", "merge_group"},
               {"GITHUB_REF_NAME", "gh-readonly-queue/main/pr-5-0123abcd"}};
  auto r = run(queue);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(result()["verdict"], "warn");
  EXPECT_TRUE(has_note("no comparable baseline on branch main")) << result()["notes"];
  EXPECT_TRUE(has_note("this merge queue run was not judged")) << result()["notes"];
  EXPECT_FALSE(has_note("this run becomes the baseline"));
}

TEST_F(CiVerdictCliTest, GitlabMergeRequestWithoutBaselineWarns) {
  auto r = run(kGitlabMergeRequest);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(result()["verdict"], "warn");
  EXPECT_TRUE(has_note("this merge request was not judged")) << result()["notes"];
}

TEST_F(CiVerdictCliTest, NoBaselinePassOptsOut) {
  auto r = run(kGitlabMergeRequest, {"--no-baseline=pass"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(result()["verdict"], "pass");
  EXPECT_TRUE(has_note("passing as --no-baseline=pass asks")) << result()["notes"];
}

TEST_F(CiVerdictCliTest, NoBaselineTakesOnlyWarnOrPass) {
  auto r = run(kGithubPullRequest, {"--no-baseline", "fail"});
  EXPECT_EQ(r.exit_code, 3);
}

TEST_F(CiVerdictCliTest, DefaultBranchRunBecomesTheBaselineAndThePullRequestIsJudged) {
  auto first = run(kGithubPush);
  EXPECT_EQ(first.exit_code, 0) << first.err;
  EXPECT_TRUE(has_note("this run becomes the baseline"));
  auto pr = run(kGithubPullRequest);
  EXPECT_NE(pr.exit_code, 3) << pr.err;
  EXPECT_EQ(result()["baseline"]["run_id"], 1) << result();
  EXPECT_FALSE(has_note("no comparable baseline on branch"));
}

TEST_F(CiVerdictCliTest, OutsideCiTheFirstRunStillPasses) {
  EXPECT_EQ(run({}).exit_code, 0);
  EXPECT_TRUE(has_note("this run becomes the baseline"));
}

TEST_F(CiVerdictCliTest, StepSummaryIsWrittenAlongsideSummary) {
  testing::write_file(dir_ / "step.md", "earlier step\n");
  auto env = kGithubPush;
  env["GITHUB_STEP_SUMMARY"] = (dir_ / "step.md").string();
  auto r = run(env, {"--summary", (dir_ / "summary.md").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto summary = testing::read_file(dir_ / "summary.md");
  auto step = testing::read_file(dir_ / "step.md");
  EXPECT_NE(summary.find("ci-verdict"), std::string::npos) << summary;
  EXPECT_EQ(step, "earlier step\n" + summary);
}

TEST_F(CiVerdictCliTest, SummaryThatIsTheStepSummaryGetsItOnce) {
  testing::write_file(dir_ / "step.md", "");
  auto env = kGithubPush;
  env["GITHUB_STEP_SUMMARY"] = (dir_ / "step.md").string();
  ASSERT_EQ(run(env, {"--summary", (dir_ / "." / "step.md").string()}).exit_code, 0);
  auto step = testing::read_file(dir_ / "step.md");
  auto heading = step.substr(0, step.find('\n') + 1);
  ASSERT_NE(heading.find("ci-verdict"), std::string::npos) << step;
  EXPECT_EQ(step.find(heading, 1), std::string::npos) << step;
}

// Issue 42, item 10: a merge request's run against a service perfgate did not
// start (a shared or staging one, as every sharded run's) measured whatever
// was deployed there. The run says so, in its notes and its summary; a run
// that started the service itself, or that judges no change, does not.
TEST_F(CiVerdictCliTest, AChangeRequestsRunOfAServiceItDidNotStartSaysWhatItMeasured) {
  const std::string said = "this merge request run measured the service at http://127.0.0.1:" +
                           std::to_string(server_.port()) +
                           "/, which perfgate did not start: it runs the merge request's code "
                           "only if this pipeline deployed it there";
  auto r = run(kGitlabMergeRequest, {"--summary", (dir_ / "summary.md").string()});
  ASSERT_NE(r.exit_code, 3) << r.err;
  EXPECT_TRUE(has_note(said)) << result()["notes"];
  EXPECT_NE(r.out.find(said), std::string::npos) << r.out;
  EXPECT_NE(testing::read_file(dir_ / "summary.md").find("which perfgate did not start"),
            std::string::npos);
  auto pr = run(kGithubPullRequest);
  ASSERT_NE(pr.exit_code, 3) << pr.err;
  EXPECT_TRUE(has_note("this pull request run measured the service at")) << result()["notes"];

  ASSERT_EQ(run(kGithubPush).exit_code, 0);
  EXPECT_FALSE(has_note("which perfgate did not start")) << result()["notes"];
  ASSERT_EQ(run({}).exit_code, 0);
  EXPECT_FALSE(has_note("which perfgate did not start")) << result()["notes"];

  // The merge request's own service, started by perfgate: nothing to say.
  uint16_t port = testing::unused_port();
  std::string started = kProfile;
  started.replace(started.rfind('}'), 1,
                  ",\n  \"service\": { \"command\": [\"" + testing::perfgate_binary() +
                      "\", \"demo-server\", \"--port\", \"" + std::to_string(port) + "\"] }\n}");
  started.replace(started.find("${TARGET_PORT}"), 14, std::to_string(port));
  testing::write_file(dir_ / "profile.json", started);
  auto own = run(kGitlabMergeRequest);
  ASSERT_NE(own.exit_code, 3) << own.err;
  EXPECT_FALSE(has_note("which perfgate did not start")) << result()["notes"];
}

}  // namespace
}  // namespace perfgate
