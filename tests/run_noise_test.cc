// Run-to-run noise pooled over earlier runs of the same code, a day's component
// included, and the run-level t test on it. Expected values from mpmath 1.3
// and SciPy 1.10: the script is in docs/statistics.md, "A young store".
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
  EXPECT_NEAR(noise.within_sd, 0.0257595729650706013, 1e-15);
  EXPECT_EQ(noise.within_df, 6);  // 2 + 1 + 0 + 3: a lone run adds nothing
  EXPECT_EQ(noise.runs, 9);
  EXPECT_EQ(noise.groups, 3);
  // Groups of levels far apart: other code, or other days; a run on yet another
  // day is judged with that spread too.
  EXPECT_GT(noise.log_sd, 10 * noise.within_sd);
}

TEST(PooledRunNoise, LeavesOutWhatHasNoLogAndGivesNothingForLoneRuns) {
  std::vector<std::vector<double>> groups = {{0, 5}, {-1, 2}, {7}};
  auto noise = pooled_run_noise(groups);
  EXPECT_EQ(noise.df, 0);
  EXPECT_EQ(noise.log_sd, 0);
  // One group of two: s = |log a - log b| / sqrt(2), by hand; one day, its
  // day part unseen.
  std::vector<std::vector<double>> pair = {{100, 110}};
  auto one = pooled_run_noise(pair);
  EXPECT_NEAR(one.log_sd, std::log(1.1) / std::sqrt(2.0), 1e-15);
  EXPECT_EQ(one.days, 1);
  EXPECT_EQ(one.day_sd, 0);
}

// Three calibrations of five runs, on three days, each day a little off the
// others: a one-way random-effects analysis of variance. SciPy 1.10 (the
// script in docs/statistics.md): MSW = 0.000631986, MSB = 0.001623711, n0 = 5.
const std::vector<std::vector<double>> kDays = {
    {100, 104, 97, 101, 99}, {102, 105, 99, 103, 101}, {98, 102, 95, 100, 97}};

TEST(PooledRunNoise, AddsTheDayComponentOfTheGroups) {
  auto noise = pooled_run_noise(kDays);
  EXPECT_NEAR(noise.within_sd, 0.025139334414801734, 1e-12);
  EXPECT_EQ(noise.within_df, 12);
  EXPECT_NEAR(noise.day_sd, 0.014083499680667518, 1e-12);  // sqrt((MSB - MSW) / n0)
  // A run on a fourth day: sqrt(MSB / n0 + (1 - 1/n0) MSW), Satterthwaite's df.
  EXPECT_NEAR(noise.log_sd, 0.028815466299794576, 1e-12);
  EXPECT_NEAR(noise.df, 9.313059387939056, 1e-9);
  EXPECT_EQ(noise.days, 3);
  EXPECT_EQ(noise.runs, 15);
}

// Days far apart: the day part leads, and the df are the days' less one, not
// Satterthwaite's 3.70 (which errs narrow with so few days).
TEST(PooledRunNoise, RestsOnTheDaysWhenTheDayPartLeads) {
  std::vector<std::vector<double>> groups = {
      {100, 104, 97}, {110, 112, 109, 111}, {95, 99}, {103, 101, 105}};
  auto noise = pooled_run_noise(groups);
  EXPECT_NEAR(noise.log_sd, 0.06002710116568447, 1e-12);
  EXPECT_NEAR(noise.day_sd, 0.055194268171354345, 1e-12);
  EXPECT_EQ(noise.df, 3);
}

// Groups that differ less than their runs: the day part is truncated at 0, and
// the launches' spread stands on its own df.
TEST(PooledRunNoise, TruncatesADayPartBelowZero) {
  std::vector<std::vector<double>> groups = {
      {100, 104, 97}, {101, 98, 103, 100}, {99, 104}, {102, 97, 101}};
  auto noise = pooled_run_noise(groups);
  EXPECT_EQ(noise.day_sd, 0);
  EXPECT_NEAR(noise.log_sd, 0.028197306453448093, 1e-12);
  EXPECT_EQ(noise.df, 8);
}

// Two jobs on one day share its luck: groups, but one day.
TEST(PooledRunNoise, CountsDaysByTheirLabels) {
  std::vector<std::string> days = {"2026-11-01", "2026-11-01", "2026-11-02"};
  auto noise = pooled_run_noise(kDays, days);
  EXPECT_EQ(noise.groups, 3);
  EXPECT_EQ(noise.days, 2);
}

TEST(PooledRunChange, IsTheTPredictionTestWithThePooledDegreesOfFreedom) {
  auto noise = pooled_run_noise(kDays);
  std::vector<double> window = {100, 103};
  auto e = estimate_run_change(93, window, 0.95, noise);
  // SciPy 1.10: the pool (9.313 df) and the window's own spread (1 df) combined
  // by their degrees of freedom; d = log 93 - mean log window, t = |d| / (s
  // sqrt(1 + 1/2)), 10.313 df. The window does not scatter significantly more
  // than the pool (F p = 0.486).
  EXPECT_NEAR(e.change_pct, -8.36437713072073, 1e-9);
  EXPECT_NEAR(e.p_value, 0.0290313392096182, 1e-9);
  EXPECT_NEAR(e.ci_low_pct, -15.112385337287188, 1e-6);
  EXPECT_NEAR(e.ci_high_pct, -1.0799465622253055, 1e-6);
  EXPECT_NEAR(e.df, 10.313059387939056, 1e-9);
  EXPECT_NE(e.method.find("run-level t (2 runs, noise pooled over 15 runs of 3 days, 9.3 df, "
                          "with the window's 1 df)"),
            std::string::npos)
      << e.method;
}

TEST(PooledRunChange, JudgesEvenOneBaselineRun) {
  auto noise = pooled_run_noise(kDays);
  std::vector<double> one = {100};
  // SciPy 1.10: t = |log 0.95| / (s sqrt 2), 9.313 df.
  EXPECT_NEAR(estimate_run_change(95, one, 0.95, noise).p_value, 0.238777294665994, 1e-9);
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
  std::vector<std::vector<double>> tight = {{1000, 1002, 998}, {1000, 1001}, {1000, 999, 1001}};
  auto noise = pooled_run_noise(tight);            // about 0.14 %
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

  // Calibrations on three other days, about as noisy as the window (SciPy 1.10:
  // MSB < MSW, so 3 + 4 + 2 = 9 df; with the window's 2 df, p = 0.0067 and the
  // interval -16.2 %..-3.6 %: past the warn limit).
  std::vector<std::vector<double>> history = {
      {1000, 970, 1030, 1010}, {1020, 990, 1045, 1000, 975}, {1000, 1040, 985}};
  base.run_noise["throughput_rps"] = pooled_run_noise(history);
  auto pooled = judge(now, &base, limits, {});
  EXPECT_EQ(pooled.verdict, Verdict::kFail);
  EXPECT_NE(pooled.checks[0].test->method.find("noise pooled over 12 runs of 3 days, 9 df"),
            std::string::npos)
      << pooled.checks[0].test->method;

  // A full window keeps its own spread: the pool is for young stores only.
  base.run_figures["throughput_rps"] = {970, 1000, 1035, 985, 1015};
  EXPECT_EQ(judge(now, &base, limits, {}).checks[0].test->method.find("pooled"), std::string::npos);
}

// Issue 39, finding 5: a pool of one calibration job knows that day's launches
// only, not how far another day's runs land. It does not judge a young window;
// the stated prior does (issue 46): half the throughput fails, an unchanged run
// cannot be held to 3 / 5 % by it and is inconclusive, saying what would decide.
TEST(PooledRunChange, APoolOfFewerThanThreeDaysLeavesTheJudgingToThePrior) {
  BaselineSample base;
  base.pooled = figures({990, 1000, 1010});
  base.run_figures["throughput_rps"] = {1000};
  std::vector<std::vector<double>> one_day = {{1000, 1003, 998, 1001, 999}};
  base.run_noise["throughput_rps"] = pooled_run_noise(one_day);
  ThresholdSet limits;
  limits["throughput_rps"] = {3.0, 5.0, std::nullopt, std::nullopt};
  auto halved = judge(figures({500, 500, 500}), &base, limits, {});
  EXPECT_EQ(halved.verdict, Verdict::kFail) << halved.checks[0].message;
  EXPECT_EQ(halved.checks[0].test->spread, "prior");
  auto same = judge(figures({1000, 1000, 1000}), &base, limits, {});
  EXPECT_EQ(same.verdict, Verdict::kWarn);
  ASSERT_TRUE(same.checks[0].inconclusive);
  EXPECT_EQ(same.checks[0].test->method.find(
                "run-level t (1 runs, the stated prior of 2-core runners, 8.0 % a run, 12 df)"),
            0u)
      << same.checks[0].test->method;
  EXPECT_NE(same.checks[0].message.find("`perfgate calibrate` on 3 days replaces it"),
            std::string::npos)
      << same.checks[0].message;
}

}  // namespace
}  // namespace perfgate
