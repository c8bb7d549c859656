#include "perfgate/report/github_annotations.h"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>

#include "support/gate_result_builder.h"

namespace perfgate {
namespace {

using testing::NamedResult;

class GithubAnnotationsGoldenTest : public ::testing::TestWithParam<NamedResult> {};

TEST_P(GithubAnnotationsGoldenTest, MatchesGoldenFile) {
  testing::expect_golden("annotations_" + GetParam().name + ".txt",
                         github_annotations(GetParam().make()));
}

INSTANTIATE_TEST_SUITE_P(Cases, GithubAnnotationsGoldenTest,
                         ::testing::ValuesIn(testing::report_cases()), testing::case_name);

TEST(GithubAnnotationsTest, EscapesDataAndProperties) {
  EXPECT_EQ(github_command("warning", "a: b, c%", "50%\r\nnext: x, y"),
            "::warning title=a%3A b%2C c%25::50%25%0D%0Anext: x, y\n");
}

TEST(GithubAnnotationsTest, FailedChecksAreErrorsAndWarnedOnesWarnings) {
  std::string text = github_annotations(testing::fail_result());
  EXPECT_NE(text.find("::error title=perfgate hello%3A throughput_rps::"), std::string::npos)
      << text;
  EXPECT_NE(text.find("::warning title=perfgate hello%3A latency_p99_ms::"), std::string::npos);
  EXPECT_EQ(github_annotations(testing::pass_result()).find("::error"), std::string::npos);
}

TEST(GithubAnnotationsTest, AnErrorIsOneErrorCommand) {
  std::string text = github_annotations(testing::error_result());
  EXPECT_TRUE(text.starts_with("::error title=perfgate hello%3A error::service.ready_url "))
      << text;
  EXPECT_EQ(text.find('\n'), text.size() - 1);
}

TEST(GithubAnnotationsTest, SaturationIsAWarning) {
  EXPECT_NE(github_annotations(testing::saturated_result())
                .find("::warning title=perfgate hello%3A saturated::inconclusive"),
            std::string::npos);
}

// A warn with nothing else to show for it (no comparable baseline, say) says why
// at its own level; with a check that explains it, notes stay notices.
TEST(GithubAnnotationsTest, AnUnexplainedWarnGivesItsNotesAsWarnings) {
  GateResult r = testing::no_baseline_result();
  r.verdict = Verdict::kWarn;
  r.exit_code = ExitStatus::kWarn;
  EXPECT_EQ(github_annotations(r),
            "::warning title=perfgate hello%3A note::no baseline yet: this run becomes the "
            "baseline\n");
  EXPECT_EQ(github_annotations(testing::no_baseline_result()),
            "::notice title=perfgate hello%3A note::no baseline yet: this run becomes the "
            "baseline\n");
}

// A shard is measured, not judged: its checks never become annotations.
TEST(GithubAnnotationsTest, AShardShowsNoChecks) {
  GateResult r = testing::fail_result();
  r.shard = ShardFile{};
  EXPECT_EQ(github_annotations(r).find("::error"), std::string::npos);
}

// One workflow command per line, whatever the names hold.
TEST(GithubAnnotationsTest, HostileTextStaysOneCommandPerLine) {
  std::string text = github_annotations(testing::hostile_result());
  ASSERT_FALSE(text.empty());
  std::regex command_line("^::(error|warning|notice) title=[^:,\\r\\x1b]*::[^\\r\\x1b]*$");
  std::istringstream in(text);
  int lines = 0;
  for (std::string line; std::getline(in, line); ++lines)
    EXPECT_TRUE(std::regex_match(line, command_line)) << line;
  EXPECT_GE(lines, 3);
}

}  // namespace
}  // namespace perfgate
