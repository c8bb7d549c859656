#include "perfgate/report/junit_report.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "perfgate/report/report_format.h"
#include "support/gate_result_builder.h"
#include "support/test_support.h"

namespace perfgate {
namespace {

using testing::NamedResult;
using testing::run_command;
using testing::source_dir;

// Writes the report to a file, as the CLI does, for xmllint to read.
struct ReportFile {
  testing::TempDir dir;
  std::string path;

  explicit ReportFile(const std::string& xml) : path((dir / "junit.xml").string()) {
    testing::write_file(path, xml);
  }
};

testing::CommandResult validate(const std::string& path) {
  auto xsd = (source_dir() / "tests/fixtures/junit-10.xsd").string();
  return run_command({"/usr/bin/xmllint", "--noout", "--schema", xsd, path});
}

// Reads back what a consumer would see: the XML parser's decoded value.
std::string xpath(const std::string& path, const std::string& expression) {
  std::string out = run_command({"/usr/bin/xmllint", "--xpath", expression, path}).out;
  if (!out.empty() && out.back() == '\n') out.pop_back();  // xmllint ends its answer with one
  return out;
}

int occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

int attribute(const std::string& xml, const std::string& element, const std::string& name) {
  std::smatch m;
  std::regex pattern("<" + element + "[^>]* " + name + "=\"([0-9]+)\"");
  if (!std::regex_search(xml, m, pattern)) return -1;
  return std::stoi(m[1]);
}

class JunitReportGoldenTest : public ::testing::TestWithParam<NamedResult> {};

TEST_P(JunitReportGoldenTest, MatchesGoldenFileAndTheSchema) {
  std::string xml = junit_report(GetParam().make());
  testing::expect_golden("junit_" + GetParam().name + ".xml", xml);
  ReportFile file(xml);
  auto check = validate(file.path);
  EXPECT_EQ(check.exit_code, 0) << check.err;
}

// The suite's counts are what dorny/test-reporter shows; they must match the cases.
TEST_P(JunitReportGoldenTest, CountsMatchTheTestcases) {
  std::string xml = junit_report(GetParam().make());
  int cases = occurrences(xml, "<testcase ");
  int failures = occurrences(xml, "<failure ");
  int errors = occurrences(xml, "<error ");
  int skipped = occurrences(xml, "<skipped ");
  EXPECT_EQ(attribute(xml, "testsuite", "tests"), cases);
  EXPECT_EQ(attribute(xml, "testsuite", "failures"), failures);
  EXPECT_EQ(attribute(xml, "testsuite", "errors"), errors);
  EXPECT_EQ(attribute(xml, "testsuite", "skipped"), skipped);
  EXPECT_EQ(attribute(xml, "testsuites", "tests"), cases);
  EXPECT_EQ(attribute(xml, "testsuites", "failures"), failures);
  EXPECT_EQ(attribute(xml, "testsuites", "errors"), errors);
}

INSTANTIATE_TEST_SUITE_P(Cases, JunitReportGoldenTest, ::testing::ValuesIn(testing::report_cases()),
                         testing::case_name);

TEST(JunitReportTest, OneTestcasePerGatedCheckPlusSaturation) {
  std::string xml = junit_report(testing::pass_result());
  EXPECT_EQ(occurrences(xml, "<testcase "), 4);
  for (const char* name : {"throughput_rps", "latency_p99_ms", "error_rate_pct", "saturation"})
    EXPECT_NE(xml.find("classname=\"perfgate.hello\" name=\"" + std::string(name) + "\""),
              std::string::npos)
        << name;
  EXPECT_EQ(xml.find("latency_p50_ms\" time"), std::string::npos);  // ungated: not a check
}

TEST(JunitReportTest, FailureHeadlineHasMetricFiguresChangeAndLimit) {
  std::string xml = junit_report(testing::fail_result());
  EXPECT_NE(xml.find("<failure message=\"throughput_rps: 14211.0 req/s vs baseline 21034.2 req/s "
                     "(-32.4%, p&lt;0.001), fail limit -25%\" type=\"regression\">"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<failure message=\"error_rate_pct: 0.250% vs baseline 0.000%, above max "
                     "0.1%\" type=\"regression\">"),
            std::string::npos)
      << xml;
}

TEST(JunitReportTest, WarnIsSkippedWithItsHeadline) {
  std::string xml = junit_report(testing::warn_result());
  EXPECT_NE(xml.find("<skipped message=\"warn: latency_p99_ms: 2.501 ms vs baseline 1.912 ms "
                     "(+30.8%, p&lt;0.001), warn limit +25%\" type=\"warn\">"),
            std::string::npos)
      << xml;
  EXPECT_EQ(xml.find("<failure"), std::string::npos);
}

TEST(JunitReportTest, SaturationIsASkippedCaseWithTheReasons) {
  std::string xml = junit_report(testing::saturated_result());
  EXPECT_NE(xml.find("name=\"saturation\" time=\"0.000\">\n      <skipped message=\"saturated: "
                     "generator thread 0 at 97% of a core; host CPU steal 12% (limit 5%)\""),
            std::string::npos)
      << xml;
}

TEST(JunitReportTest, ErrorIsOneRunCaseWithTheMessage) {
  std::string xml = junit_report(testing::error_result());
  EXPECT_EQ(occurrences(xml, "<testcase "), 1);
  EXPECT_NE(xml.find("name=\"run\""), std::string::npos);
  EXPECT_NE(xml.find("<error message=\"service.ready_url http://127.0.0.1:18080/health"),
            std::string::npos);
}

TEST(JunitReportTest, HostileTextIsEscapedAndReadsBack) {
  GateResult r = testing::hostile_result();
  ReportFile file(junit_report(r));
  EXPECT_EQ(run_command({"/usr/bin/xmllint", "--noout", file.path}).exit_code, 0);
  EXPECT_EQ(xpath(file.path, "string(/testsuites/testsuite/@name)"),
            "perfgate." + report::printable(r.profile_name));
  EXPECT_EQ(xpath(file.path, "string(//property[@name='branch']/@value)"),
            report::printable(r.ci.branch));
  std::string xml = testing::read_file(file.path);
  EXPECT_NE(xml.find("perfgate.shop &lt;&amp;&quot;&apos;|&gt;"), std::string::npos);
}

TEST(JunitReportTest, TimesHaveAtMostThreeDecimals) {
  GateResult r = testing::pass_result();
  r.duration_s = 1234.56789;
  std::string xml = junit_report(r);
  EXPECT_NE(xml.find("<testsuites name=\"perfgate\" tests=\"4\" failures=\"0\" errors=\"0\" "
                     "time=\"1234.568\">"),
            std::string::npos)
      << xml;
  r.duration_s = -1;  // a clock that went backwards still gives a valid report
  EXPECT_NE(junit_report(r).find("time=\"0.000\">"), std::string::npos);
}

TEST(JunitReportTest, TestcaseNamesAreUnique) {
  GateResult r = testing::pass_result();
  r.checks.push_back(r.checks.front());
  r.checks.back().metric = "saturation";
  ReportFile file(junit_report(r));
  EXPECT_EQ(xpath(file.path, "count(//testcase[@name='saturation'])"), "1");
  EXPECT_EQ(xpath(file.path, "count(//testcase[@name='saturation#2'])"), "1");
}

TEST(JunitReportTest, PropertiesCarryTheRunsIdentity) {
  ReportFile file(junit_report(testing::pass_result()));
  EXPECT_EQ(xpath(file.path, "string(//property[@name='run_id']/@value)"), "2");
  EXPECT_EQ(xpath(file.path, "string(//property[@name='commit']/@value)"),
            "0123456789abcdef0123456789abcdef01234567");
  EXPECT_EQ(xpath(file.path, "string(//property[@name='engine']/@value)"), "curl");
  EXPECT_FALSE(xpath(file.path, "string(//property[@name='host_key']/@value)").empty());
}

}  // namespace
}  // namespace perfgate
