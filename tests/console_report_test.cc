#include "perfgate/report/console_report.h"

#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "perfgate/report/report_format.h"
#include "support/gate_result_builder.h"

namespace perfgate {
namespace {

using testing::NamedResult;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The table's lines: from the header row to the last metric row.
std::vector<std::string> table_of(const std::string& text, size_t rows) {
  auto lines = lines_of(text);
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].starts_with("  metric "))
      return {lines.begin() + static_cast<long>(i),
              lines.begin() + static_cast<long>(i + rows + 1)};
  return {};
}

class ConsoleReportGoldenTest : public ::testing::TestWithParam<NamedResult> {};

TEST_P(ConsoleReportGoldenTest, MatchesGoldenFile) {
  testing::expect_golden("console_" + GetParam().name + ".txt", console_report(GetParam().make()));
}

INSTANTIATE_TEST_SUITE_P(Cases, ConsoleReportGoldenTest,
                         ::testing::ValuesIn(testing::report_cases()), testing::case_name);

// An interval of a few noisy runs can reach absurd factors: past 99999 % the
// report says "huge" and no more (the JSON keeps the number).
TEST(ConsoleReportTest, AbsurdChangesArePrintedAsBounds) {
  EXPECT_EQ(report::format_change(2.7e21), ">+99999%");
  EXPECT_EQ(report::format_change(-1e6), "<-99999%");
  EXPECT_EQ(report::format_change(12.34), "+12.3%");
  EXPECT_EQ(report::level(100 - 5.0 / 3), "98.33");
  EXPECT_EQ(report::level(95), "95");
}

TEST(ConsoleReportTest, EveryMetricIsARowAndUngatedOnesHaveNoVerdict) {
  GateResult r = testing::pass_result();
  auto table = table_of(console_report(r), r.checks.size());
  ASSERT_EQ(table.size(), r.checks.size() + 1);
  for (size_t i = 0; i < r.checks.size(); ++i) {
    EXPECT_TRUE(table[i + 1].starts_with("  " + r.checks[i].metric + " ")) << table[i + 1];
    std::string verdict = r.checks[i].gated ? " pass" : " -";
    EXPECT_TRUE(table[i + 1].ends_with(verdict)) << table[i + 1];
  }
}

// Right-aligned figures end in the same column as their header.
TEST(ConsoleReportTest, ColumnsAreAligned) {
  GateResult r = testing::fail_result();
  auto table = table_of(console_report(r), r.checks.size());
  ASSERT_FALSE(table.empty());
  for (const char* column : {"baseline", "now", "change"}) {
    size_t end = table[0].find(std::string(" ") + column + " ") + 1 + std::string(column).size();
    for (const auto& row : table) {
      EXPECT_NE(row[end - 1], ' ') << column << " in: " << row;
      EXPECT_EQ(row[end], ' ') << column << " in: " << row;
    }
  }
}

TEST(ConsoleReportTest, FiguresHaveFixedDecimalsPerUnit) {
  std::string text = console_report(testing::pass_result());
  EXPECT_NE(text.find("21034.2"), std::string::npos);  // req/s: 1 decimal
  EXPECT_NE(text.find("2.044"), std::string::npos);    // ms: 3 decimals
  EXPECT_NE(text.find("0.000"), std::string::npos);    // %: 3 decimals
  EXPECT_NE(text.find("-0.7%"), std::string::npos);    // change: 1 decimal, signed
  EXPECT_NE(text.find("+6.9%"), std::string::npos);
}

TEST(ConsoleReportTest, NoBaselineShowsDashesAndTheNote) {
  std::string text = console_report(testing::no_baseline_result());
  EXPECT_NE(text.find("  throughput_rps          -  20876.9"), std::string::npos) << text;
  EXPECT_NE(text.find("note: no baseline yet: this run becomes the baseline\n"), std::string::npos);
  EXPECT_NE(text.find("verdict: PASS (exit 0) - run 1, no baseline\n"), std::string::npos);
}

TEST(ConsoleReportTest, SaturationReasonsArePrinted) {
  std::string text = console_report(testing::saturated_result());
  EXPECT_NE(text.find("saturated: generator thread 0 at 97% of a core\n"), std::string::npos);
  EXPECT_NE(text.find("verdict: WARN (exit 2)"), std::string::npos);
}

TEST(ConsoleReportTest, ErrorPrintsTheErrorAndExitThree) {
  std::string text = console_report(testing::error_result());
  EXPECT_NE(text.find("\nerror: service.ready_url"), std::string::npos) << text;
  EXPECT_TRUE(text.ends_with("verdict: ERROR (exit 3)\n")) << text;
  EXPECT_EQ(text.find("metric"), std::string::npos);  // no figures, no table
}

TEST(ConsoleReportTest, FailNamesTheComparedRuns) {
  std::string text = console_report(testing::fail_result());
  EXPECT_TRUE(
      text.ends_with("verdict: FAIL (exit 1) - run 2 compared with run 1 (commit abc1234)\n"))
      << text;
}

// A profile name must not be able to colour, move or split the log.
TEST(ConsoleReportTest, ControlCharactersNeverReachTheLog) {
  std::string text = console_report(testing::hostile_result());
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_EQ(text.find('\x01'), std::string::npos);
  EXPECT_EQ(text.find('\xff'), std::string::npos);
  EXPECT_NE(text.find("note: note <&\"'|>"), std::string::npos);
  EXPECT_NE(text.find(" second line\n"), std::string::npos);  // one note, one line
}

TEST(ConsoleReportTest, NotRecordedRunSaysSo) {
  GateResult r = testing::pass_result();
  r.run_id = std::nullopt;
  r.recorded = false;
  EXPECT_NE(console_report(r).find("run not recorded, compared with run 1"), std::string::npos);
}

// report_format.h is the reporters' shared, header-only formatting; its edge
// cases are checked here, beside the report that shows most of them.
TEST(ReportFormatTest, RoundedZeroHasNoSign) {
  EXPECT_EQ(report::fixed(-0.0001, 3), "0.000");
  EXPECT_EQ(report::format_change(-0.04), "0.0%");
  EXPECT_EQ(report::format_change(0.05), "+0.1%");
  EXPECT_EQ(report::format_change(std::nullopt), "-");
  EXPECT_EQ(report::fixed(std::numeric_limits<double>::infinity(), 1), "-");
}

TEST(ReportFormatTest, LimitsReadAsWritten) {
  EXPECT_EQ(report::compact(10), "10");
  EXPECT_EQ(report::compact(0.1), "0.1");
  EXPECT_EQ(report::compact(2.50), "2.5");
  MetricCheck c;
  c.metric = "throughput_rps";
  c.unit = "req/s";
  c.thresholds.fail_pct = 5;
  c.thresholds.min = 1000;
  EXPECT_EQ(report::format_limits(c), "fail -5%, min 1000 req/s");
}

TEST(ReportFormatTest, HeadlineNamesTheLimitThatDecided) {
  MetricCheck c;
  c.metric = "latency_p99_ms";
  c.unit = "ms";
  c.value = 62;
  c.baseline = 40;
  c.change_pct = 55;
  c.thresholds.warn_pct = 10;
  c.thresholds.fail_pct = 20;
  EXPECT_EQ(report::headline(c),
            "latency_p99_ms: 62.000 ms vs baseline 40.000 ms (+55.0%), fail limit +20%");
  c.thresholds.max = 50;
  EXPECT_EQ(report::headline(c),
            "latency_p99_ms: 62.000 ms vs baseline 40.000 ms (+55.0%), above max 50 ms");
  c.baseline = std::nullopt;
  c.change_pct = std::nullopt;
  EXPECT_EQ(report::headline(c), "latency_p99_ms: 62.000 ms, no baseline, above max 50 ms");
}

TEST(ReportFormatTest, MalformedUtf8IsReplaced) {
  const std::string replacement = "\xEF\xBF\xBD";
  EXPECT_EQ(report::valid_utf8("caf\xC3\xA9"), "caf\xC3\xA9");           // kept
  EXPECT_EQ(report::valid_utf8("\xC0\xAF"), replacement + replacement);  // overlong '/'
  EXPECT_EQ(report::valid_utf8("\xED\xA0\x80"),
            replacement + replacement + replacement);  // surrogate
  EXPECT_EQ(report::valid_utf8("\xEF\xBF\xBE"), replacement + replacement + replacement);  // U+FFFE
  EXPECT_EQ(report::valid_utf8("a\xE2\x82"), "a" + replacement + replacement);  // cut short
  EXPECT_EQ(report::printable("a\x1b[0m\tb"), "a" + replacement + "[0m\tb");
  EXPECT_EQ(report::one_line("a\nb\r\n"), "a b  ");
}

// Row 15: answers that are not HTTP are named as such, in the user's words.
TEST(ConsoleReportTest, Row15_InvalidResponsesAreNamedWithTheirReason) {
  GateResult r = testing::pass_result();
  r.totals.errors.count_invalid(kBothLengthAndChunked);
  r.totals.errors.count_invalid(kBothLengthAndChunked);
  std::string text = console_report(r);
  EXPECT_NE(text.find("2 invalid responses (both Content-Length and chunked)"), std::string::npos)
      << text;
}

// Row 12: the count says what it counts, 1xx included, not "4xx/5xx", and
// names the classes it holds (issue 46).
TEST(ConsoleReportTest, Row12_TheStatusCountSaysWhatItCounts) {
  GateResult r = testing::pass_result();
  r.totals.statuses.count(101);
  std::string text = console_report(r);
  EXPECT_NE(text.find(", 1 with a status not counted as success (1xx x 1),"), std::string::npos)
      << text;
}

// A wrong path: every request answered 404 (issue 46). The console names the
// failed statuses by class, and the socket errors by kind.
TEST(ConsoleReportTest, FailedStatusesAreNamedByClass) {
  GateResult r = testing::pass_result();
  for (int i = 0; i < 3; ++i) r.totals.statuses.count(404);
  r.totals.statuses.count(503);
  r.totals.statuses.count(200);
  r.totals.errors.timeout = 2;
  std::string text = console_report(r);
  EXPECT_NE(text.find(", 2 socket errors (connect 0, read 0, write 0, timeout 2, other 0), 4 with "
                      "a status not counted as success (4xx x 3, 5xx x 1),"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace perfgate
