// What perfgate makes of a server's answers, run as a user would: which
// statuses count as successes (2xx and 3xx, or a request's success_statuses),
// and answers that are not HTTP, named as such rather than as "no response".
// The servers are ScriptedServers in this process, on loopback.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "support/engine_fixtures.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

using testing::ScriptedServer;
using testing::TempDir;

std::string profile_for(const std::string& url, const std::string& engine,
                        const std::string& target_extra = "") {
  return R"({
  "name": "answers",
  "target": { "url": ")" +
         url + "\"" + target_extra + R"( },
  "load": { "threads": 1, "connections": 2, "duration": "300ms", "warmup": "0s",
            "timeout": "1s", "engine": ")" +
         engine + R"(" },
  "repeat": { "count": 2, "discard": 0 }
})";
}

testing::CommandResult run_profile(const TempDir& dir, const std::string& profile,
                                   const std::vector<std::string>& extra = {}) {
  testing::write_file(dir / "profile.json", profile);
  std::vector<std::string> argv = {testing::perfgate_binary(), "run",
                                   (dir / "profile.json").string(), "--store",
                                   (dir / "perfgate.db").string()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return testing::run_command(argv, {}, {}, 60);
}

/// The console's error_rate_pct figure ("100.000"), "" when the row is missing.
std::string error_rate_shown(const std::string& console) {
  size_t row = console.find("\n  error_rate_pct ");
  if (row == std::string::npos) return "";
  std::istringstream fields(console.substr(row + 1, console.find('\n', row + 1) - row - 1));
  std::string name, baseline, now;
  fields >> name >> baseline >> now;
  return now;
}

class AnswerCliTest : public ::testing::TestWithParam<const char*> {};

// Row 12: a 404 is a failed request by default, and a success when the
// profile's success_statuses lists it; both engines judge alike.
TEST_P(AnswerCliTest, Row12_A404ListedInSuccessStatusesIsASuccess) {
  ScriptedServer server({.response = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"});
  TempDir unlisted_dir;
  auto unlisted = run_profile(unlisted_dir, profile_for(server.url(), GetParam()));
  // A first run has no baseline: exit 2 at best, whatever its error rate.
  EXPECT_NE(unlisted.exit_code, 0) << unlisted.out << unlisted.err;
  EXPECT_EQ(error_rate_shown(unlisted.out), "100.000") << unlisted.out;

  TempDir listed_dir;
  auto json = listed_dir / "result.json";
  auto listed = run_profile(
      listed_dir, profile_for(server.url(), GetParam(), R"(, "success_statuses": ["2xx", 404])"),
      {"--json", json.string()});
  EXPECT_LE(listed.exit_code, 2) << listed.out << listed.err;
  EXPECT_EQ(error_rate_shown(listed.out), "0.000") << listed.out;
  EXPECT_NE(listed.out.find(", 0 with a status not counted as success,"), std::string::npos)
      << listed.out;
  // The JSON still says what the server answered: 4xx, and no error rate.
  auto result = nlohmann::json::parse(testing::read_file(json));
  EXPECT_GT(result["load"]["status"]["4xx"].get<uint64_t>(), 0u) << result.dump();
}

// Row 12: a 101 as the final answer is no HTTP response: never a success. The
// probe before the load already refuses it (the load's own judgement of a 1xx
// is Http1WorkerTest's, for both engines).
TEST_P(AnswerCliTest, Row12_A101AsTheFinalAnswerIsAFailure) {
  ScriptedServer server(
      {.response = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n",
       .close_after = true});
  TempDir dir;
  auto r = run_profile(dir, profile_for(server.url(), GetParam()));
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_EQ(r.out.find("verdict: PASS"), std::string::npos) << r.out;
}

// Row 15: both Content-Length and chunked framing is an invalid answer, said
// so, not "no response (N socket errors)".
TEST_P(AnswerCliTest, Row15_BothContentLengthAndChunkedIsAnInvalidResponse) {
  ScriptedServer server({.response = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
                                     "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"});
  TempDir dir;
  auto r = run_profile(dir, profile_for(server.url(), GetParam()));
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("invalid responses (both Content-Length and chunked)"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("socket errors"), std::string::npos) << r.err;
}

// Row 15: an HTTP/0.9 answer (no status line) is named, not "no response".
TEST_P(AnswerCliTest, Row15_AnHttp09AnswerIsNamed) {
  ScriptedServer server({.response = "hello, world\n", .close_after = true});
  TempDir dir;
  auto r = run_profile(dir, profile_for(server.url(), GetParam()));
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("HTTP/0.9"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("socket errors"), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(Engines, AnswerCliTest, ::testing::Values("native", "curl"));

// Row 12: a wrong success_statuses is one clear line, with its key.
TEST(AnswerValidateCliTest, Row12_AWrongSuccessStatusIsOneClearLine) {
  TempDir dir;
  testing::write_file(dir / "profile.json", profile_for("http://127.0.0.1:9/", "auto",
                                                        R"(, "success_statuses": ["2xx", "1xx"])"));
  auto r = testing::run_command(
      {testing::perfgate_binary(), "validate", (dir / "profile.json").string()});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("target.success_statuses[1]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("1xx is never a final answer"), std::string::npos) << r.err;
}

// Row 15: an invalid URL's error does not quote its password.
TEST(AnswerValidateCliTest, Row15_AnInvalidUrlsErrorHidesItsPassword) {
  TempDir dir;
  testing::write_file(dir / "profile.json",
                      profile_for("http://user:s3cretPW@127.0.0.1:99999/", "auto"));
  auto r = testing::run_command(
      {testing::perfgate_binary(), "validate", (dir / "profile.json").string()});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("port must be a number"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("s3cretPW"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("s3cretPW"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace perfgate
