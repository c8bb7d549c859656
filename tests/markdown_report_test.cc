#include "perfgate/report/markdown_report.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "support/gate_result_builder.h"

namespace perfgate {
namespace {

using testing::NamedResult;

class MarkdownReportGoldenTest : public ::testing::TestWithParam<NamedResult> {};

TEST_P(MarkdownReportGoldenTest, MatchesGoldenFile) {
  testing::expect_golden("summary_" + GetParam().name + ".md", markdown_report(GetParam().make()));
}

INSTANTIATE_TEST_SUITE_P(Cases, MarkdownReportGoldenTest,
                         ::testing::ValuesIn(testing::report_cases()), testing::case_name);

// Pipes that are not escaped with a backslash: GitHub's cell separators.
int cell_separators(const std::string& line) {
  int n = 0;
  for (size_t i = 0; i < line.size(); ++i)
    if (line[i] == '|' && (i == 0 || line[i - 1] != '\\')) ++n;
  return n;
}

TEST(MarkdownReportTest, HeadingSaysTheVerdictInAWord) {
  EXPECT_TRUE(markdown_report(testing::fail_result()).starts_with("## perfgate hello: FAIL\n"));
  EXPECT_TRUE(markdown_report(testing::error_result()).starts_with("## perfgate hello: ERROR\n"));
}

TEST(MarkdownReportTest, TableHasARowPerMetric) {
  GateResult r = testing::pass_result();
  std::string md = markdown_report(r);
  EXPECT_NE(
      md.find("| metric | baseline | now | change | estimate | 95% CI | p | limit | verdict |\n"),
      std::string::npos);
  EXPECT_NE(md.find("| latency_p99_ms | 1.912 | 2.044 | +6.9% | +6.9% | +1.2%..+12.5% | 0.018 | "
                    "+25% / +50%, max 50 ms | pass |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| latency_p50_ms | 0.905 | 0.912 | +0.8% | - | - | - | - | - |"),
            std::string::npos);
}

TEST(MarkdownReportTest, FindingsAndSaturationAreSpelledOut) {
  std::string md = markdown_report(testing::saturated_result());
  EXPECT_NE(md.find("- **warn**: throughput_rps: 14211.0 req/s vs baseline 21034.2 req/s"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("**Saturated:**"), std::string::npos);
  EXPECT_NE(md.find("- Reason: generator thread 0 at 97% of a core\n"), std::string::npos);
}

TEST(MarkdownReportTest, HostAndLoadAreInACollapsibleBlock) {
  std::string md = markdown_report(testing::pass_result());
  auto open = md.find("<details>\n<summary>");
  ASSERT_NE(open, std::string::npos);
  EXPECT_NE(md.find("| host os | Debian GNU/Linux 12 (bookworm) |", open), std::string::npos);
  EXPECT_NE(md.find("| engine | curl |", open), std::string::npos);
  EXPECT_TRUE(md.ends_with("</details>\n"));
}

// Every table row keeps its cell count, and no raw HTML or markup gets through.
TEST(MarkdownReportTest, HostileNamesAreEscaped) {
  std::string md = markdown_report(testing::hostile_result());
  std::istringstream in(md);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("| fact ") || line.starts_with("| :--- | :--- |")) continue;
    if (line.starts_with("| ") && line.find(" | ") != std::string::npos) {
      int expected = md.find(line) < md.find("<details>") ? 10 : 3;
      EXPECT_EQ(cell_separators(line), expected) << line;
    }
  }
  EXPECT_NE(md.find("## perfgate shop \\<\\&\"'\\|\\> \\`\\*\\_\\[x\\](y)\\`"), std::string::npos)
      << md;
  EXPECT_EQ(md.find('\x1b'), std::string::npos);
}

// A pull request comment holding "@octocat" notifies octocat, "#12" links issue
// 12: in names from the user a WORD JOINER after the sign keeps both inert.
TEST(MarkdownReportTest, MentionsAndIssueReferencesInNamesStayInert) {
  const std::string joiner = "\u2060";
  GateResult r = testing::pass_result();
  r.ci.branch = "fix/@octocat-and-#12";
  r.ci.baseline_branch = "@org/team";
  r.profile_name = "shop #7 for @admin";
  std::string md = markdown_report(r);
  for (const char* live : {"@octocat", "#12", "@org", "#7", "@admin"})
    EXPECT_EQ(md.find(live), std::string::npos) << live << " stays live in:\n" << md;
  EXPECT_NE(md.find("fix/@" + joiner + "octocat-and-#" + joiner + "12"), std::string::npos) << md;
  EXPECT_NE(md.find("## perfgate shop #" + joiner + "7 for @" + joiner + "admin"),
            std::string::npos)
      << md;
  // A '#' or '@' that is no reference stays as it is.
  r.ci.branch = "a#b @ c";
  EXPECT_NE(markdown_report(r).find("a#b @ c"), std::string::npos);
}

}  // namespace
}  // namespace perfgate
