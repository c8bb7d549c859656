#include "perfgate/report/html_report.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "support/run_record_builder.h"

namespace perfgate {
namespace {

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Twelve runs on main, the eleventh saturated, the last one slower.
std::vector<RunRecord> history() {
  std::vector<RunRecord> runs;
  for (int n = 1; n <= 12; ++n) {
    RunRecord run = testing::synthetic_run(n, n == 12 ? 18000 : 20000 + 10 * n, 2.0);
    run.id = n;
    if (n == 11) run.saturation = {true, {"generator thread 0 at 97% of a core"}, {}};
    runs.push_back(run);
  }
  return runs;
}

TEST(HtmlReportTest, HasOneSvgChartPerMetric) {
  std::string html = html_report(html_input(history()));
  EXPECT_EQ(count_of(html, "<svg "), 4u);
  for (const char* metric :
       {"throughput_rps", "latency_p50_ms", "latency_p99_ms", "error_rate_pct"})
    EXPECT_NE(html.find("data-metric=\"" + std::string(metric) + "\""), std::string::npos);
  EXPECT_EQ(count_of(html, "<polyline class=\"series\""), 4u);
}

TEST(HtmlReportTest, MarksTheSaturatedRunInEveryChart) {
  std::string html = html_report(html_input(history()));
  EXPECT_EQ(count_of(html, "<rect class=\"saturated\""), 4u);
  EXPECT_NE(html.find("SATURATED: generator thread 0 at 97% of a core"), std::string::npos);
}

// The saturated run 11 never becomes a baseline: run 10 is the latest's.
TEST(HtmlReportTest, PicksTheBaselineAsTheGateDoes) {
  HtmlReportInput in = html_input(history());
  ASSERT_TRUE(in.baseline);
  EXPECT_EQ(in.runs[*in.baseline].id, 10);
  EXPECT_EQ(count_of(html_report(in), "<rect class=\"band\""), 4u);
  EXPECT_TRUE(in.thresholds.at("throughput_rps").warn_pct);
}

TEST(HtmlReportTest, TablesTheLatestRunAgainstItsBaseline) {
  std::string html = html_report(html_input(history()));
  EXPECT_NE(html.find("<td>throughput_rps</td><td>20100.0</td><td>18000.0</td><td>-10.4%</td>"),
            std::string::npos);
  EXPECT_NE(html.find("baseline: run 10"), std::string::npos);
}

TEST(HtmlReportTest, EscapesEveryText) {
  auto runs = history();
  const std::string nasty = "<script>alert('x')</script> & \"q\" \x01";
  for (RunRecord& run : runs) {
    run.profile_name = "shop " + nasty;
    run.ci.branch = nasty;
    run.ci.commit = nasty;
  }
  runs[10].saturation.reasons = {nasty};
  std::string html = html_report(html_input(runs));
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find('\x01'), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"),
            std::string::npos);
}

// Self-contained: no script, no stylesheet or image from anywhere, no URL but
// the SVG namespace.
TEST(HtmlReportTest, NeedsNoNetwork) {
  std::string html = html_report(html_input(history()));
  std::string without_ns =
      std::regex_replace(html, std::regex("xmlns=\"http://www.w3.org/2000/svg\""), "");
  EXPECT_EQ(without_ns.find("http"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
}

// 2 ms of CPU per 1000 responses: 2 us per request.
TEST(HtmlReportTest, ChartsServiceCpuPerRequestWhenMeasured) {
  auto runs = history();
  for (RunRecord& run : runs)
    for (const Iteration& it : run.iterations)
      run.service_cpu_s.push_back(static_cast<double>(it.stats.responses) * 2e-6);
  HtmlReportInput in = html_input(runs);
  EXPECT_NEAR(in.runs.back().metrics.at("service_cpu_us_per_request"), 2.0, 1e-9);
  std::string html = html_report(in);
  EXPECT_EQ(count_of(html, "<svg "), 5u);
  EXPECT_NE(html.find("data-metric=\"service_cpu_us_per_request\""), std::string::npos);
}

// A paired run's baseline is its own other side, and its table has the
// metrics it was gated on beyond the timed ones: the service's CPU and the
// counted cost (issue 48: "baseline: none", and the deciding count missing).
TEST(HtmlReportTest, APairedCountedRunIsTabledAgainstItsOwnBaselineSide) {
  auto runs = history();
  RunRecord base = testing::synthetic_run(13, 20000, 2.0);
  base.id = 13;
  base.kind = "paired-baseline";
  base.pair = "p1";
  RunRecord cand = testing::synthetic_run(14, 19000, 2.0);
  cand.id = 14;
  cand.kind = "paired";
  cand.pair = "p1";
  for (RunRecord* run : {&base, &cand}) {
    run->cost.instrument = "callgrind";
    run->cost.key = "k";
    double count = run == &base ? 1000 : 1100;
    run->cost.launches = {{{"instructions_per_request", count}},
                          {{"instructions_per_request", count}}};
    for (const Iteration& it : run->iterations)
      run->service_cpu_s.push_back(static_cast<double>(it.stats.responses) * 2e-6);
  }
  runs.push_back(base);
  runs.push_back(cand);
  HtmlReportInput in = html_input(runs);
  ASSERT_TRUE(in.baseline);
  EXPECT_EQ(in.runs[*in.baseline].id, 13);
  std::string html = html_report(in);
  EXPECT_NE(html.find("baseline: run 13"), std::string::npos);
  auto at = html.find("<tr><td>instructions_per_request</td>");
  ASSERT_NE(at, std::string::npos) << html.substr(html.find("<table>"));
  std::string row = html.substr(at, html.find("</tr>", at) - at);
  EXPECT_NE(row.find("<td>+10.0%</td>"), std::string::npos) << row;
  EXPECT_NE(html.find("<td>service_cpu_us_per_request</td>"), std::string::npos);
}

TEST(HtmlReportTest, ASingleRunHasNoBaseline) {
  auto runs = history();
  runs.resize(1);
  HtmlReportInput in = html_input(runs);
  EXPECT_FALSE(in.baseline);
  std::string html = html_report(in);
  EXPECT_EQ(count_of(html, "<svg "), 4u);
  EXPECT_NE(html.find("baseline: none"), std::string::npos);
}

TEST(HtmlReportTest, NoRunsIsAPageThatSaysSo) {
  std::string html = html_report(html_input({}));
  EXPECT_EQ(count_of(html, "<svg "), 0u);
  EXPECT_NE(html.find("No runs stored"), std::string::npos);
}

}  // namespace
}  // namespace perfgate
