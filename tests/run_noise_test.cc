// Run-to-run noise pooled over earlier runs of the same code, and the run-level
// t test on it. Expected values from mpmath 1.3 (30 digits; Student's t
// distribution as the regularized incomplete beta function, its quantile by
// root finding): the script is in docs/statistics.md, "A young store".
#include "perfgate/core/run_noise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "perfgate/core/verdict.h"

namespace perfgate {
namespace {

const std::vector<std::vector<double>> kGroups = {
    {100, 104, 97}, {50, 52}, {200}, {80, 81, 79, 82}};

TEST(PooledRunNoise, IsTheWithinGroupSpreadOfLogFigures) {
  auto noise = pooled_run_noise(kGroups);
  // mpmath: sqrt(sum of squared deviations of the logs from their group means / 6)
  EXPECT_NEAR(noise.log_sd, 0.0257595729650706013, 1e-15);
  EXPECT_EQ(noise.df, 6);  // 2 + 1 + 0 + 3: a lone run adds nothing
  EXPECT_EQ(noise.runs, 9);
  EXPECT_EQ(noise.groups, 3);
}

TEST(PooledRunNoise, LeavesOutWhatHasNoLogAndGivesNothingForLoneRuns) {
  std::vector<std::vector<double>> groups = {{0, 5}, {-1, 2}, {7}};
  auto noise = pooled_run_noise(groups);
  EXPECT_EQ(noise.df, 0);
  EXPECT_EQ(noise.log_sd, 0);
  // One group of two: s = |log a - log b| / sqrt(2), by hand.
  std::vector<std::vector<double>> pair = {{100, 110}};
  EXPECT_NEAR(pooled_run_noise(pair).log_sd, std::log(1.1) / std::sqrt(2.0), 1e-15);
}

TEST(PooledRunChange, IsTheTPredictionTestWithThePooledDegreesOfFreedom) {
  auto noise = pooled_run_noise(kGroups);
  std::vector<double> window = {100, 104, 97};
  auto e = estimate_run_change(90, window, 0.95, noise);
  // SciPy 1.10: the pool (6 df) and the window's own spread (2 df) combined by
  // their degrees of freedom, s^2 = (6 s_p^2 + 2 s_w^2) / 8; d = log 90 - mean log
  // window, t = |d| / (s sqrt(1 + 1/3)), 8 df. The window does not scatter
  // significantly more than the pool (F = 1.839 on 2 and 6 df, p = 0.238).
  EXPECT_NEAR(e.change_pct, -10.26246172352559, 1e-9);
  EXPECT_NEAR(e.p_value, 0.010701554989055307, 1e-9);
  EXPECT_NEAR(e.ci_low_pct, -16.783355152718393, 1e-6);
  EXPECT_NEAR(e.ci_high_pct, -3.2305881749957694, 1e-6);
  EXPECT_EQ(e.n_base, 3);
  EXPECT_NE(e.method.find("run-level t (3 runs, noise pooled over 9 runs, 6 df, with the "
                          "window's 2 df)"),
            std::string::npos)
      << e.method;
  // The window's own spread (2 df) cannot call the same run significant.
  EXPECT_GT(estimate_run_change(90, window, 0.95).p_value, 0.05);
}

TEST(PooledRunChange, JudgesEvenOneBaselineRun) {
  auto noise = pooled_run_noise(kGroups);
  std::vector<double> one = {100};
  // mpmath: t = |log 0.95| / (s_p sqrt 2), 6 df.
  EXPECT_NEAR(estimate_run_change(95, one, 0.95, noise).p_value, 0.208771754728668176, 1e-9);
}

TEST(PooledRunChange, RefusesWhatItCannotJudge) {
  auto noise = pooled_run_noise(kGroups);
  std::vector<double> window = {100, 104};
  EXPECT_THROW(estimate_run_change(90, std::vector<double>{}, 0.95, noise), std::invalid_argument);
  EXPECT_THROW(estimate_run_change(0, window, 0.95, noise), std::invalid_argument);
  EXPECT_THROW(estimate_run_change(90, window, 1.0, noise), std::invalid_argument);
  EXPECT_THROW(estimate_run_change(90, window, 0.95, RunNoise{}), std::invalid_argument);
  RunNoise steady{0, 4, 5, 1};
  std::vector<double> same = {100, 100};
  EXPECT_EQ(estimate_run_change(101, same, 0.95, steady).p_value, 0);
}

// Issue 26, finding 8: a pool narrower than what the window itself shows (the
// noise grew since its runs, or varies by day) would err narrow; the window's
// own spread decides then.
TEST(PooledRunChange, AWindowThatScattersMoreThanThePoolUsesItsOwnSpread) {
  std::vector<std::vector<double>> tight = {{1000, 1002, 998}, {500, 501}, {800, 799, 801}};
  auto noise = pooled_run_noise(tight);            // about 0.17 %
  std::vector<double> window = {1000, 1150, 880};  // about 13 %
  auto e = estimate_run_change(900, window, 0.95, noise);
  EXPECT_NE(e.method.find("the window's own spread"), std::string::npos) << e.method;
  EXPECT_EQ(e.df, 2);
  EXPECT_NEAR(e.p_value, estimate_run_change(900, window, 0.95).p_value, 1e-12);
}

// SciPy 1.10: f.sf(4.0, 2, 6) and f.sf(1.8389112151305995, 2, 6).
TEST(FDistribution, UpperTailMatchesScipy) {
  EXPECT_NEAR(stats::f_distribution_sf(4.0, 2, 6), 0.07871720116618075, 1e-12);
  EXPECT_NEAR(stats::f_distribution_sf(1.8389112151305995, 2, 6), 0.23829822259117955, 1e-12);
  EXPECT_EQ(stats::f_distribution_sf(0, 2, 6), 1);
}

// The verdict: a young window of three runs whose own spread (2 df) leaves a 10 %
// loss a warning fails it with the pooled noise of earlier runs of the same code.
RunFigures figures(std::vector<double> values) {
  RunFigures f;
  f.values["throughput_rps"] = values;
  f.summary["throughput_rps"] = values[values.size() / 2];
  return f;
}

TEST(PooledRunChange, TurnsAYoungWindowsWarnIntoAFail) {
  BaselineSample base;
  base.pooled = figures({960, 970, 980, 990, 1000, 1010, 1020, 1030, 1040});
  base.run_figures["throughput_rps"] = {970, 1000, 1035};  // sd of logs about 3.2 %
  ThresholdSet limits;
  limits["throughput_rps"] = {3.0, 5.0, std::nullopt, std::nullopt};
  auto now = figures({890, 895, 900, 905, 910});
  auto young = judge(now, &base, limits, {});
  EXPECT_EQ(young.verdict, Verdict::kWarn);
  // Past the fail limit, but the window's 2 df could not tell a 5 % change from
  // none: inconclusive, not a verdict.
  EXPECT_TRUE(young.checks[0].inconclusive) << young.checks[0].message;

  std::vector<std::vector<double>> history = {
      {970, 1000, 1035}, {1000, 990, 1010, 1005}, {1020, 1000, 985, 1010, 995}};
  base.run_noise["throughput_rps"] = pooled_run_noise(history);  // 2 + 3 + 4 = 9 df
  auto pooled = judge(now, &base, limits, {});
  EXPECT_EQ(pooled.verdict, Verdict::kFail);
  EXPECT_NE(pooled.checks[0].test->method.find("noise pooled over 12 runs, 9 df"),
            std::string::npos);

  // A full window keeps its own spread: the pool is for young stores only.
  base.run_figures["throughput_rps"] = {970, 1000, 1035, 985, 1015};
  EXPECT_EQ(judge(now, &base, limits, {}).checks[0].test->method.find("pooled"), std::string::npos);
}

}  // namespace
}  // namespace perfgate
