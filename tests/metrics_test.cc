#include "perfgate/core/metrics.h"

#include <gtest/gtest.h>

#include <cmath>

namespace perfgate {
namespace {

Iteration iteration(int index, bool discarded, uint64_t responses, uint64_t latency_us,
                    uint64_t errors = 0) {
  Iteration it;
  it.index = index;
  it.discarded = discarded;
  it.duration = std::chrono::seconds(1);
  it.stats.responses = responses;
  it.stats.errors.read = errors;
  for (uint64_t i = 0; i < responses; ++i) {
    it.stats.statuses.count(200);
    it.stats.latency.record(std::chrono::microseconds(latency_us));
  }
  return it;
}

TEST(MetricsTest, MedianOfKeptIterationsIgnoresDiscarded) {
  std::vector<Iteration> its = {iteration(0, true, 10, 9000), iteration(1, false, 100, 1000),
                                iteration(2, false, 300, 3000), iteration(3, false, 200, 2000)};
  auto m = summarize(its);
  EXPECT_DOUBLE_EQ(m.at("throughput_rps"), 200.0);
  EXPECT_NEAR(m.at("latency_max_ms"), 3.0, 1e-9);  // the worst kept iteration, not the median
  EXPECT_EQ(m.size(), metric_defs().size());
}

// A run's quantile is of its kept requests, all windows merged: 600 kept requests,
// the slowest 300 at 3 ms, so p75 and p99 are 3 ms, where the median of the three
// windows' own quantiles would say 2 ms. The discarded window's 9 ms is not in it.
TEST(MetricsTest, QuantilesPoolTheKeptWindowsHistograms) {
  std::vector<Iteration> its = {iteration(0, true, 10, 9000), iteration(1, false, 100, 1000),
                                iteration(2, false, 300, 3000), iteration(3, false, 200, 2000)};
  auto m = summarize(its);
  EXPECT_NEAR(m.at("latency_p99_ms"), 3.0, 0.01);
  EXPECT_NEAR(m.at("latency_p75_ms"), 3.0, 0.01);
  EXPECT_NEAR(m.at("latency_p50_ms"), 2.0, 0.01);
  auto f = run_figures(its);
  EXPECT_NEAR(f.summary.at("latency_p99_ms"), 3.0, 0.01);
  // The values behind the tests stay one per window.
  ASSERT_EQ(f.values.at("latency_p99_ms").size(), 3u);
  EXPECT_NEAR(f.values.at("latency_p99_ms")[0], 1.0, 0.01);
  EXPECT_EQ(f.unit_responses, (std::vector<std::uint64_t>{100, 300, 200}));
}

// Per launch (paired.block 2): each launch's quantile of its own merged windows,
// and the responses it rests on.
TEST(MetricsTest, PerLaunchQuantilesPoolEachLaunchsWindows) {
  std::vector<Iteration> its = {iteration(0, false, 100, 1000), iteration(1, false, 300, 3000),
                                iteration(2, false, 200, 2000), iteration(3, false, 200, 2000)};
  auto f = per_launch_figures(its, {}, 2);
  ASSERT_EQ(f.values.at("latency_p99_ms").size(), 2u);
  EXPECT_NEAR(f.values.at("latency_p99_ms")[0], 3.0, 0.01);  // launch 0: 100 at 1 ms, 300 at 3
  EXPECT_NEAR(f.values.at("latency_p99_ms")[1], 2.0, 0.01);
  EXPECT_EQ(f.unit_responses, (std::vector<std::uint64_t>{400, 400}));
}

TEST(MetricsTest, TailResponsesAreOnlyAQuantilesConcern) {
  EXPECT_DOUBLE_EQ(tail_responses(*find_metric("latency_p99"), 1000), 10);
  EXPECT_NEAR(tail_responses(*find_metric("latency_p999"), 1000), 1, 1e-9);
  EXPECT_TRUE(std::isinf(tail_responses(*find_metric("throughput"), 10)));
}

TEST(MetricsTest, ErrorRateCountsSocketErrorsAnd5xx) {
  auto it = iteration(0, false, 98, 1000, 2);
  it.stats.statuses.count(503);  // one of the 98 answered 5xx
  it.stats.statuses.by_class[2] -= 1;
  EXPECT_NEAR(it.stats.error_rate_pct(), 3.0, 1e-9);
}

TEST(MetricsTest, MedianOfEvenAndOddCounts) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({}), 0.0);
}

TEST(MetricsTest, FindMetricByEitherKey) {
  ASSERT_NE(find_metric("latency_p99"), nullptr);
  EXPECT_EQ(find_metric("latency_p99")->key, "latency_p99_ms");
  EXPECT_EQ(find_metric("throughput_rps")->better, Better::kHigher);
  EXPECT_EQ(find_metric("nope"), nullptr);
}

TEST(MetricsTest, StatusClassesAndNon2xx) {
  StatusCounts s;
  for (int code : {200, 204, 301, 404, 500, 503, 99, 700}) s.count(code);
  EXPECT_EQ(s.of_class(2), 2u);
  EXPECT_EQ(s.of_class(3), 1u);
  EXPECT_EQ(s.non_2xx_3xx(), 5u);
  EXPECT_EQ(s.failed(), 5u);
}

}  // namespace
}  // namespace perfgate
