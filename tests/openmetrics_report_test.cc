#include "perfgate/report/openmetrics_report.h"

#include <gtest/gtest.h>

#include <sstream>

#include "support/gate_result_builder.h"

namespace perfgate {
namespace {

using testing::NamedResult;

class OpenMetricsReportGoldenTest : public ::testing::TestWithParam<NamedResult> {};

TEST_P(OpenMetricsReportGoldenTest, MatchesGoldenFile) {
  testing::expect_golden("openmetrics_" + GetParam().name + ".txt", openmetrics(GetParam().make()));
}

// Every line is a comment or `name{labels} value`, and the file ends with # EOF.
TEST_P(OpenMetricsReportGoldenTest, IsWellFormed) {
  std::string text = openmetrics(GetParam().make());
  ASSERT_GE(text.size(), 6u);
  EXPECT_EQ(text.substr(text.size() - 6), "# EOF\n");
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("# ")) continue;
    EXPECT_TRUE(line.starts_with("perfgate_")) << line;
    EXPECT_NE(line.find("{profile=\""), std::string::npos) << line;
    EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, OpenMetricsReportGoldenTest,
                         ::testing::ValuesIn(testing::report_cases()), testing::case_name);

TEST(OpenMetricsReportTest, NamesEachMetricByItsContractKey) {
  std::string text = openmetrics(testing::pass_result());
  EXPECT_NE(text.find("perfgate_throughput_rps{profile=\"hello\"} 20876.9\n"), std::string::npos);
  EXPECT_NE(text.find("perfgate_latency_p99_ms_baseline{profile=\"hello\"} 1.912\n"),
            std::string::npos);
  EXPECT_NE(text.find("perfgate_exit_code{profile=\"hello\"} 0\n"), std::string::npos);
}

TEST(OpenMetricsReportTest, EscapesLabelValues) {
  GateResult r = testing::pass_result();
  r.profile_name = "a\"b\\c\nd";
  EXPECT_NE(openmetrics(r).find("{profile=\"a\\\"b\\\\c d\"}"), std::string::npos);
}

}  // namespace
}  // namespace perfgate
