// The HTML report draws the change points of the default branch's history.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "perfgate/report/html_report.h"
#include "support/run_record_builder.h"

namespace perfgate {
namespace {

// Ten runs at 20000 req/s, then eight at 22000, on main; oldest first.
std::vector<RunRecord> stepped(uint64_t after = 22000) {
  std::vector<RunRecord> runs;
  for (int n = 1; n <= 18; ++n) {
    RunRecord run = testing::synthetic_run(n, n <= 10 ? 20000 : after, 2.0);
    run.id = n;
    runs.push_back(run);
  }
  return runs;
}

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(HtmlChangePointTest, DrawsALineAtTheRunThatOpenedTheNewLevel) {
  HtmlReportInput in = html_input(stepped());
  ASSERT_EQ(in.change_points.size(), 1u);
  EXPECT_EQ(in.change_points[0].run_id, 11);
  EXPECT_EQ(in.change_points[0].metric, "throughput_rps");
  std::string html = html_report(in);
  EXPECT_EQ(count_of(html, "<line class=\"change-point\""), 1u);  // throughput's chart only
  EXPECT_NE(html.find("change point: run 11 commit c0ffee1 +10.0% p="), std::string::npos);
}

TEST(HtmlChangePointTest, AHistoryWithoutAStepHasNoLine) {
  HtmlReportInput in = html_input(stepped(20000));
  EXPECT_TRUE(in.change_points.empty());
  EXPECT_EQ(count_of(html_report(in), "<line class=\"change-point\""), 0u);
}

// Runs of another branch are not the default branch's history.
TEST(HtmlChangePointTest, OnlyTheDefaultBranchIsSearched) {
  auto runs = stepped();
  for (size_t i = 10; i < runs.size() - 1; ++i) runs[i].ci.branch = "feature";
  EXPECT_TRUE(html_input(runs).change_points.empty());
}

}  // namespace
}  // namespace perfgate
