// `perfgate comment` against a GitHub and a GitLab API on 127.0.0.1 that record
// every call: created once, then updated in place (found past the first page);
// each refusal one line and exit 3; the token never in any output; bounded by
// --timeout and ended by SIGINT.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "support/fake_forge.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

using nlohmann::json;
using testing::CommandResult;
using testing::FakeForge;
using testing::TempDir;

constexpr const char* kToken = "tok-5ecret-do-not-print";
using Env = std::map<std::string, std::string>;

int lines(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

class CommentCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::write_file(dir_ / "summary.md", "## perfgate: pass\n\nfirst run\n");
    testing::write_file(dir_ / "event.json",
                        R"({"action":"synchronize","pull_request":{"number":7}})");
  }

  Env github() const {
    return {{"GITHUB_ACTIONS", "true"},
            {"GITLAB_CI", ""},
            {"GITHUB_API_URL", forge_.url()},
            {"GITHUB_REPOSITORY", "octo/shop"},
            {"GITHUB_EVENT_PATH", (dir_ / "event.json").string()},
            {"GITHUB_REF", "refs/pull/7/merge"},
            {"GITHUB_TOKEN", kToken},
            {"http_proxy", ""},
            {"HTTP_PROXY", ""},
            {"all_proxy", ""},
            {"ALL_PROXY", ""}};
  }
  Env gitlab() const {
    return {{"GITHUB_ACTIONS", ""},
            {"GITLAB_CI", "true"},
            {"CI_API_V4_URL", forge_.url("/api/v4")},
            {"CI_PROJECT_ID", "42"},
            {"CI_MERGE_REQUEST_IID", "12"},
            {"PERFGATE_GITLAB_TOKEN", kToken},
            {"GITLAB_TOKEN", ""},
            {"http_proxy", ""},
            {"HTTP_PROXY", ""},
            {"all_proxy", ""},
            {"ALL_PROXY", ""}};
  }

  CommandResult comment(const Env& env, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {testing::perfgate_binary(), "comment",
                                     (dir_ / "summary.md").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = testing::run_command(args, env, {}, 60);
    EXPECT_EQ(r.out.find(kToken), std::string::npos) << r.out;
    EXPECT_EQ(r.err.find(kToken), std::string::npos) << r.err;
    return r;
  }

  // Every refusal: one line on stderr naming the status, exit 3; on stdout nothing,
  // or on GitHub that same line as the job's error annotation.
  void expect_refusal(const Env& env, int status, const std::string& hint) {
    forge_.fail_with(status, std::string(R"({"message":"no, )") + kToken + R"("})");
    auto r = comment(env);
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("HTTP " + std::to_string(status)), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(hint), std::string::npos) << r.err;
    if (env.at("GITHUB_ACTIONS") == "true") {
      EXPECT_EQ(lines(r.out), 1) << r.out;
      EXPECT_EQ(r.out.rfind("::error title=perfgate error::comment: GitHub answered HTTP " +
                                std::to_string(status),
                            0),
                0u)
          << r.out;
    } else {
      EXPECT_EQ(r.out, "");
    }
    // Nor at the most verbose level (comment() checks every output for the token).
    EXPECT_EQ(comment(env, {"--log-level", "trace"}).exit_code, 3);
  }

  TempDir dir_;
  FakeForge forge_;
};

TEST_F(CommentCliTest, GithubCreatesOnceThenUpdatesTheSameComment) {
  // 150 comments by others: the marker is found on the list's second page.
  for (int i = 0; i < 150; ++i) forge_.add_comment("looks good " + std::to_string(i));
  auto first = comment(github(), {"--key", "checkout"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  auto calls = forge_.calls();
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.back().method, "POST");
  EXPECT_EQ(calls.back().target, "/repos/octo/shop/issues/7/comments");
  EXPECT_NE(calls.back().head.find(std::string("Authorization: Bearer ") + kToken),
            std::string::npos);
  EXPECT_NE(calls.back().head.find("User-Agent: perfgate"), std::string::npos);
  int64_t id = forge_.comments().back().first;
  EXPECT_EQ(first.out, "perfgate: created comment " + std::to_string(id) + " on pull request 7\n");
  EXPECT_EQ(forge_.comments().back().second,
            "<!-- perfgate:checkout -->\n## perfgate: pass\n\nfirst run\n");

  testing::write_file(dir_ / "summary.md", "## perfgate: fail\n\nsecond run\n");
  size_t before = forge_.calls().size();
  auto second = comment(github(), {"--key", "checkout"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  calls = forge_.calls();
  std::vector<std::string> made;
  for (size_t i = before; i < calls.size(); ++i)
    made.push_back(calls[i].method + " " + calls[i].target);
  EXPECT_EQ(made, (std::vector<std::string>{
                      "GET /user", "GET /repos/octo/shop/issues/7/comments?per_page=100&page=1",
                      "GET /repos/octo/shop/issues/7/comments?per_page=100&page=2",
                      "PATCH /repos/octo/shop/issues/comments/" + std::to_string(id)}));
  EXPECT_EQ(forge_.comments().size(), 151u);
  EXPECT_EQ(forge_.comments().back().second,
            "<!-- perfgate:checkout -->\n## perfgate: fail\n\nsecond run\n");
  EXPECT_EQ(second.out, "perfgate: updated comment " + std::to_string(id) + " on pull request 7\n");
}

TEST_F(CommentCliTest, GithubNumberFromTheRefWhenTheEventHasNone) {
  testing::write_file(dir_ / "event.json", R"({"ref":"refs/heads/main"})");
  auto env = github();
  env["GITHUB_REF"] = "refs/pull/31/merge";
  ASSERT_EQ(comment(env).exit_code, 0);
  EXPECT_EQ(forge_.calls().back().target, "/repos/octo/shop/issues/31/comments");
}

TEST_F(CommentCliTest, GithubPushIsNoPullRequest) {
  testing::write_file(dir_ / "event.json", R"({"ref":"refs/heads/main"})");
  auto env = github();
  env["GITHUB_REF"] = "refs/heads/main";
  auto r = comment(env);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("not a pull request"), std::string::npos) << r.err;
  EXPECT_TRUE(forge_.calls().empty());
}

TEST_F(CommentCliTest, EachKeyHasItsOwnComment) {
  ASSERT_EQ(comment(github(), {"--key", "checkout"}).exit_code, 0);
  ASSERT_EQ(comment(github(), {"--key", "search"}).exit_code, 0);
  ASSERT_EQ(comment(github(), {"--key", "checkout"}).exit_code, 0);
  ASSERT_EQ(forge_.comments().size(), 2u);
  EXPECT_EQ(forge_.comments()[1].second.rfind("<!-- perfgate:search -->", 0), 0u);
}

TEST_F(CommentCliTest, GitlabCreatesOnceThenUpdatesTheSameNote) {
  forge_.add_comment("a reviewer's note");
  ASSERT_EQ(comment(gitlab()).exit_code, 0);
  auto calls = forge_.calls();
  EXPECT_EQ(calls.back().method, "POST");
  EXPECT_EQ(calls.back().target, "/api/v4/projects/42/merge_requests/12/notes");
  EXPECT_NE(calls.back().head.find(std::string("PRIVATE-TOKEN: ") + kToken), std::string::npos);
  int64_t id = forge_.comments().back().first;

  testing::write_file(dir_ / "summary.md", "## perfgate: warn\n");
  auto second = comment(gitlab());
  ASSERT_EQ(second.exit_code, 0) << second.err;
  calls = forge_.calls();
  EXPECT_EQ(calls[calls.size() - 2].method + " " + calls[calls.size() - 2].target,
            "GET /api/v4/projects/42/merge_requests/12/notes?sort=asc&per_page=100&page=1");
  EXPECT_EQ(calls.back().method + " " + calls.back().target,
            "PUT /api/v4/projects/42/merge_requests/12/notes/" + std::to_string(id));
  EXPECT_EQ(forge_.comments().size(), 2u);
  EXPECT_EQ(forge_.comments().back().second, "<!-- perfgate:summary -->\n## perfgate: warn\n");
  EXPECT_EQ(second.out,
            "perfgate: updated comment " + std::to_string(id) + " on merge request !12\n");
}

TEST_F(CommentCliTest, GitlabTokenFallsBackToGitlabToken) {
  auto env = gitlab();
  env["PERFGATE_GITLAB_TOKEN"] = "";
  env["GITLAB_TOKEN"] = kToken;
  ASSERT_EQ(comment(env).exit_code, 0);
  EXPECT_NE(forge_.calls().back().head.find(std::string("PRIVATE-TOKEN: ") + kToken),
            std::string::npos);
}

TEST_F(CommentCliTest, MissingTokenIsOneLine) {
  auto env = gitlab();
  env["PERFGATE_GITLAB_TOKEN"] = "";
  auto r = comment(env);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("CI_JOB_TOKEN cannot post notes"), std::string::npos) << r.err;
  EXPECT_TRUE(forge_.calls().empty());
}

TEST_F(CommentCliTest, GithubRefusalsAreOneLineAndExit3) {
  expect_refusal(github(), 401, "check GITHUB_TOKEN");
  expect_refusal(github(), 404, "check GITHUB_REPOSITORY (octo/shop) and pull request 7");
  expect_refusal(github(), 502, "server failed");
  expect_refusal(github(), 403, "pull-requests: write");
}

TEST_F(CommentCliTest, GitlabRefusalsAreOneLineAndExit3) {
  expect_refusal(gitlab(), 401, "check PERFGATE_GITLAB_TOKEN");
  expect_refusal(gitlab(), 404, "check CI_PROJECT_ID (42) and merge request !12");
  expect_refusal(gitlab(), 500, "server failed");
}

TEST_F(CommentCliTest, RefusalOnUpdateIsOneLineToo) {
  ASSERT_EQ(comment(github()).exit_code, 0);
  forge_.fail_with(503, "<html>busy</html>");
  auto r = comment(github());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("HTTP 503"), std::string::npos) << r.err;
}

// An endless answer took 2.2 GB: the API's answer is read up to 16 MiB.
TEST_F(CommentCliTest, AnOversizedAnswerIsCutAtItsLimit) {
  forge_.fail_with(200, "[" + std::string(20 << 20, ' ') + "]");
  auto r = comment(github());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(lines(r.err), 1) << r.err.substr(0, 400);
  EXPECT_NE(r.err.find("the answer is larger than 16 MiB"), std::string::npos)
      << r.err.substr(0, 400);
}

TEST_F(CommentCliTest, ASilentServerIsBoundedByTimeout) {
  forge_.hang(dir_ / "asked");
  auto r = comment(github(), {"--timeout", "500ms"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("GET " + forge_.url("/user")), std::string::npos) << r.err;
}

TEST_F(CommentCliTest, SigintEndsAWaitingRequest) {
  forge_.hang(dir_ / "asked");
  auto env = github();
  // perfgate waits on the silent server for up to an hour; once the server has
  // the request, the shell sends SIGINT by perfgate's PID.
  std::string script =
      "\"$0\" comment \"$1\" --timeout 1h & pid=$!; "
      "while [ ! -e \"$2\" ] && kill -0 $pid 2>/dev/null; do sleep 0.05; done; "
      "kill -INT $pid; wait $pid";
  auto r = testing::run_command({"/bin/sh", "-c", script, testing::perfgate_binary(),
                                 (dir_ / "summary.md").string(), (dir_ / "asked").string()},
                                env, {}, 30);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("interrupted"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(kToken), std::string::npos);
}

TEST_F(CommentCliTest, AFailedCommentLeavesTheGatesResultAlone) {
  // The gate's verdict is its own step's exit code and files; the comment is a
  // step of its own that only reads the summary.
  auto before = testing::read_file(dir_ / "summary.md");
  forge_.fail_with(500, "{}");
  EXPECT_EQ(comment(github()).exit_code, 3);
  EXPECT_EQ(testing::read_file(dir_ / "summary.md"), before);
}

TEST_F(CommentCliTest, KeyThatCouldEndTheMarkerIsRefused) {
  auto r = comment(github(), {"--key", "a-->b"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_TRUE(forge_.calls().empty());
}

// Anyone may paste the marker into a comment of theirs: only the token's own
// user's comment is perfgate's to edit.
TEST_F(CommentCliTest, AMarkedCommentByAnotherUserIsLeftAlone) {
  const std::string planted = "<!-- perfgate:summary -->\nplanted by someone else";
  int64_t theirs = forge_.add_comment(planted, "mallory");
  auto r = comment(github());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const auto& call : forge_.calls()) EXPECT_NE(call.method, "PATCH") << call.target;
  ASSERT_EQ(forge_.comments().size(), 2u);
  EXPECT_EQ(forge_.comments()[0], std::make_pair(theirs, planted));
  EXPECT_EQ(forge_.calls().front().method + " " + forge_.calls().front().target, "GET /user");
  // perfgate's own comment, once there, is the one updated.
  int64_t own = forge_.comments()[1].first;
  testing::write_file(dir_ / "summary.md", "second\n");
  auto again = comment(github());
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(forge_.calls().back().target,
            "/repos/octo/shop/issues/comments/" + std::to_string(own));
  EXPECT_EQ(forge_.comments()[0].second, planted);
}

// GitHub Actions' GITHUB_TOKEN: GET /user answers 403, comments are by
// github-actions[bot], a Bot. A person's marked comment is never edited, even
// one whose login reads like the bot's.
TEST_F(CommentCliTest, AnInstallationTokenUpdatesItsBotsCommentNeverAPersons) {
  forge_.act_as_installation_token();
  const std::string planted = "<!-- perfgate:summary -->\nnot the bot";
  forge_.add_comment(planted, "github-actions[bot]", "User");
  forge_.add_comment(planted, "mallory", "User");
  auto first = comment(github());
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(forge_.calls().back().method, "POST");
  ASSERT_EQ(forge_.comments().size(), 3u);
  int64_t own = forge_.comments()[2].first;
  auto second = comment(github());
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(forge_.calls().back().method + " " + forge_.calls().back().target,
            "PATCH /repos/octo/shop/issues/comments/" + std::to_string(own));
  EXPECT_EQ(forge_.comments().size(), 3u);
  EXPECT_EQ(forge_.comments()[0].second, planted);
  EXPECT_EQ(forge_.comments()[1].second, planted);
}

// A GitHub App's installation token (actions/create-github-app-token, say):
// GET /user answers 403 as for GITHUB_TOKEN, but the comments are by
// my-app[bot]. The second run edits the first's comment instead of adding one;
// a person's comment holding the same marker stays as it was.
TEST_F(CommentCliTest, AGithubAppTokenUpdatesItsOwnCommentNotAPersons) {
  forge_.act_as_installation_token("my-app[bot]");
  const std::string pasted = "<!-- perfgate:checkout -->\npasted by a reviewer";
  int64_t theirs = forge_.add_comment(pasted, "a-reviewer", "User");
  auto first = comment(github(), {"--key", "checkout"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(forge_.calls().back().method, "POST");
  ASSERT_EQ(forge_.comments().size(), 2u);
  int64_t own = forge_.comments()[1].first;
  for (int run = 2; run <= 3; ++run) {
    testing::write_file(dir_ / "summary.md",
                        "## perfgate: pass\n\nrun " + std::to_string(run) + "\n");
    auto again = comment(github(), {"--key", "checkout"});
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_EQ(again.out,
              "perfgate: updated comment " + std::to_string(own) + " on pull request 7\n");
    EXPECT_EQ(forge_.calls().back().method + " " + forge_.calls().back().target,
              "PATCH /repos/octo/shop/issues/comments/" + std::to_string(own));
  }
  ASSERT_EQ(forge_.comments().size(), 2u);
  EXPECT_EQ(forge_.comments()[0], std::make_pair(theirs, pasted));
  EXPECT_EQ(forge_.comments()[1].second,
            "<!-- perfgate:checkout -->\n## perfgate: pass\n\nrun 3\n");
  for (const auto& call : forge_.calls())
    EXPECT_NE(call.target, "/repos/octo/shop/issues/comments/" + std::to_string(theirs));
}

TEST_F(CommentCliTest, AMarkedNoteByAnotherGitlabUserIsLeftAlone) {
  const std::string planted = "<!-- perfgate:summary -->\nplanted";
  forge_.add_comment(planted, "mallory");
  auto r = comment(gitlab());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(forge_.calls().back().method, "POST");
  EXPECT_EQ(forge_.comments()[0].second, planted);
  EXPECT_EQ(forge_.calls().front().target, "/api/v4/user");
}

TEST_F(CommentCliTest, ATokenThatWouldInjectAHeaderIsRefusedBeforeAnyRequest) {
  for (const std::string& token :
       {std::string(kToken) + "\r\nX-Injected: 1", std::string(kToken) + "\n",
        std::string("tok en"), std::string("tok\x01") + kToken, std::string("tok\x7f")}) {
    auto env = github();
    env["GITHUB_TOKEN"] = token;
    auto r = comment(env);
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("GITHUB_TOKEN holds a space, a line break or a control byte"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find(token.substr(0, 5)), std::string::npos) << r.err;
    auto lab = gitlab();
    lab["PERFGATE_GITLAB_TOKEN"] = token;
    auto g = comment(lab);
    EXPECT_EQ(g.exit_code, 3) << g.err;
    EXPECT_NE(g.err.find("PERFGATE_GITLAB_TOKEN holds"), std::string::npos) << g.err;
  }
  EXPECT_TRUE(forge_.calls().empty());
}

TEST_F(CommentCliTest, ARepositoryThatIsNotOwnerSlashNameIsRefusedBeforeAnyRequest) {
  for (const char* repository : {"o/r/../../../admin?x=", "octo", "octo/", "/shop", "../shop",
                                 "octo/..", "./shop", "octo/shop#x", "octo/sh op", "octo/shop/"}) {
    auto env = github();
    env["GITHUB_REPOSITORY"] = repository;
    auto r = comment(env);
    EXPECT_EQ(r.exit_code, 3) << repository << ": " << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("GITHUB_REPOSITORY must be owner/name"), std::string::npos) << r.err;
  }
  EXPECT_TRUE(forge_.calls().empty());
  // Dots, dashes and underscores are names GitHub allows.
  auto env = github();
  env["GITHUB_REPOSITORY"] = "my.org-1/the_shop.js";
  ASSERT_EQ(comment(env).exit_code, 0);
  EXPECT_EQ(forge_.calls().back().target, "/repos/my.org-1/the_shop.js/issues/7/comments");
}

TEST_F(CommentCliTest, AGitlabProjectOrIidThatWouldMoveTheRequestIsRefused) {
  auto env = gitlab();
  env["CI_PROJECT_ID"] = "42/../../admin";
  EXPECT_EQ(comment(env).exit_code, 3);
  env = gitlab();
  env["CI_MERGE_REQUEST_IID"] = "12?x=";
  EXPECT_EQ(comment(env).exit_code, 3);
  EXPECT_TRUE(forge_.calls().empty());
}

TEST_F(CommentCliTest, TheApiUrlsPasswordIsNeverPrinted) {
  auto env = github();
  env["GITHUB_API_URL"] = "http://ci-user:pa55-in-url@127.0.0.1:" + std::to_string(forge_.port());
  forge_.fail_with(500, "{}");
  for (const char* level : {"info", "trace"}) {
    auto r = comment(env, {"--log-level", level});
    EXPECT_EQ(r.exit_code, 3);
    EXPECT_NE(r.err.find("http://***@127.0.0.1:" + std::to_string(forge_.port()) + "/user"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find("pa55-in-url"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("pa55-in-url"), std::string::npos) << r.out;
    EXPECT_EQ(r.err.find("ci-user"), std::string::npos) << r.err;
  }
  // And when no answer comes at all (curl's own failure).
  env["GITHUB_API_URL"] =
      "http://ci-user:pa55-in-url@127.0.0.1:" + std::to_string(testing::unused_port());
  auto r = comment(env);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("http://***@127.0.0.1:"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("pa55-in-url"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("pa55-in-url"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace perfgate
