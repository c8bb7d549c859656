#include "perfgate/report/chart_sample.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "perfgate/report/html_report.h"

namespace perfgate {
namespace {

// Rows of a long history as the store lists them (no iterations): one run in
// 50 failed, one in 100 saturated.
std::vector<RunRecord> rows(size_t count) {
  std::vector<RunRecord> out(count);
  for (size_t i = 0; i < count; ++i) {
    out[i].id = static_cast<int64_t>(i + 1);
    out[i].created_at = "2026-11-01T10:00:00Z";
    out[i].ci.commit = std::to_string(1000000 + i);
    if (i % 50 == 49) out[i].verdict = Verdict::kFail;
    if (i % 100 == 98) out[i].saturation = {true, {"steal 9%"}, {}};
  }
  return out;
}

TEST(ChartSample, AShortHistoryIsDrawnWhole) {
  auto picked = chart_sample(rows(30), 400, std::nullopt);
  ASSERT_EQ(picked.size(), 30u);
  EXPECT_EQ(picked.back(), 29u);
}

TEST(ChartSample, ALongOneKeepsEveryFailedAndSaturatedRunTheEndsAndTheBaseline) {
  auto history = rows(10'000);
  auto picked = chart_sample(history, 400, size_t{4321});
  std::vector<bool> in(history.size());
  for (size_t i : picked) in[i] = true;
  for (size_t i = 0; i < history.size(); ++i)
    if (always_charted(history[i])) {
      EXPECT_TRUE(in[i]) << "run " << history[i].id;
    }
  EXPECT_TRUE(in.front());
  EXPECT_TRUE(in.back());
  EXPECT_TRUE(in[4321]);
  // 200 failed, 100 saturated, about 400 others.
  EXPECT_LE(picked.size(), 200u + 100u + 402u);
  EXPECT_TRUE(std::is_sorted(picked.begin(), picked.end()));
}

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// The run numbers named in the markers of one class ("run 123" in their titles).
std::set<int64_t> named_runs(const std::string& html, const std::string& open,
                             const std::string& close) {
  std::set<int64_t> out;
  for (size_t at = html.find(open); at != std::string::npos; at = html.find(open, at + 1)) {
    std::string marker = html.substr(at, html.find(close, at) - at);
    for (size_t r = marker.find("run "); r != std::string::npos; r = marker.find("run ", r + 1))
      out.insert(std::atoll(marker.c_str() + r + 4));
  }
  return out;
}

// 100,000 runs drawn from a sample: one page under 2 MB that still marks every
// failed and saturated run (by its number in a marker's title).
TEST(ChartSample, TheReportOfAHundredThousandRunsStaysSmallAndMarksEveryFailure) {
  auto history = rows(100'000);
  auto picked = chart_sample(history, 400, std::nullopt);
  HtmlReportInput in;
  in.profile_name = "hello";
  in.history_size = history.size();
  in.pruned = "1200 runs pruned (policy), last at 2026-12-01T12:00:00Z";
  for (size_t i : picked) {
    const RunRecord& r = history[i];
    RunPoint point{r.id, r.created_at, r.ci.commit, "main", r.verdict, r.saturation, {}, i};
    point.metrics["throughput_rps"] = 20000 + static_cast<double>(i % 97) * 3;
    point.metrics["latency_p99_ms"] = 2 + static_cast<double>(i % 89) / 100;
    point.metrics["error_rate_pct"] = 0;
    point.metrics["latency_p50_ms"] = 1 + static_cast<double>(i % 83) / 100;
    in.runs.push_back(point);
  }
  std::string html = html_report(in);
  EXPECT_LT(html.size(), 2'000'000u);
  EXPECT_NE(html.find("100000 runs, oldest first"), std::string::npos);
  EXPECT_NE(html.find("Pruned: 1200 runs pruned (policy)"), std::string::npos);
  auto failed = named_runs(html, "<circle class=\"point fail\"", "</circle>");
  auto saturated = named_runs(html, "<rect class=\"saturated\"", "</rect>");
  size_t marked = 0;
  for (const RunRecord& r : history) {
    if (!always_charted(r)) continue;
    ++marked;
    EXPECT_EQ((r.saturation.saturated ? saturated : failed).count(r.id), 1u) << "run " << r.id;
  }
  EXPECT_EQ(marked, 3000u);
  EXPECT_EQ(count_of(html, "<svg "), 4u);
}

}  // namespace
}  // namespace perfgate
