// calibrate's variance components and Kalibera & Jones's counts, against
// values worked out with SciPy (python3-scipy: scipy.stats.norm.ppf, numpy).
#include "perfgate/store/calibration.h"

#include <gtest/gtest.h>

#include <cmath>

namespace perfgate {
namespace {

// A run of the throughput metric whose windows have these log figures.
RunFigures run_of(std::vector<double> logs) {
  RunFigures r;
  for (double& v : logs) v = 1000 * std::exp(v);
  r.values["throughput_rps"] = logs;
  r.summary["throughput_rps"] = logs[logs.size() / 2];
  return r;
}

Profile plain_profile() {
  Profile p;
  p.name = "calibration";
  p.repeat.count = 2;
  p.repeat.discard = 0;
  return p;
}

// Issue 39, item 4: calibrate checks the warm-up transient. Each run's first
// kept window against the median of its later ones: log ratios -6, -4 and -6 %,
// mean -5.333 %, 95 % interval by Student t with 2 df -8.202 to -2.465 %
// (SciPy: t.ppf(.975, 2) * std(ddof=1) / sqrt(3)); as changes (expm1) -5.194 %,
// -7.874 to -2.435 %: throughput lower, its worse side.
TEST(CalibrationTest, AFirstWindowWorseInEveryRunIsAWarmUpTransient) {
  std::vector<RunFigures> runs = {run_of({-0.05, 0, 0.01, 0.02}), run_of({-0.03, 0, 0.01, 0.02}),
                                  run_of({-0.05, 0.01, 0.01, 0.01})};
  auto c = calibrate(runs, plain_profile());
  const auto& w = c.metrics.at(0).warmup;
  ASSERT_TRUE(w);
  EXPECT_NEAR(w->first_pct, std::expm1(-0.05333333333) * 100, 1e-6);
  EXPECT_NEAR(w->low_pct, std::expm1(-0.08201768487) * 100, 1e-6);
  EXPECT_NEAR(w->high_pct, std::expm1(-0.02464898180) * 100, 1e-6);
  EXPECT_EQ(w->runs, 3);
  EXPECT_TRUE(w->found);
  auto report = calibration_report(c);
  EXPECT_NE(report.find("warm-up: the service is still warming up after load.warmup 2s"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("throughput_rps: the first kept window is 5.2% lower than the later ones "
                        "(95% CI -7.9 to -2.4%, 3 runs)"),
            std::string::npos)
      << report;
}

// A first window no worse than the rest, or one worse in some runs and better
// in others, or worse by less than kWarmupTransientPct, is no transient; with
// fewer than 3 kept windows a run there is nothing to compare it with.
TEST(CalibrationTest, NoTransientWhereTheFirstWindowIsLikeTheRest) {
  std::vector<RunFigures> mixed = {run_of({-0.03, 0, 0.01}), run_of({0.04, 0.01, 0.01}),
                                   run_of({0, 0.01, -0.01})};
  auto c = calibrate(mixed, plain_profile());
  ASSERT_TRUE(c.metrics.at(0).warmup);
  EXPECT_FALSE(c.metrics.at(0).warmup->found);
  EXPECT_NE(calibration_report(c).find("warm-up: no transient after load.warmup 2s"),
            std::string::npos);
  // Significant but small: 1 % in every run.
  std::vector<RunFigures> small = {run_of({-0.01, 0, 0}), run_of({-0.01, 0, 0}),
                                   run_of({-0.011, 0, 0})};
  auto s = calibrate(small, plain_profile()).metrics.at(0).warmup;
  ASSERT_TRUE(s);
  EXPECT_LT(s->high_pct, 0);
  EXPECT_FALSE(s->found);
  std::vector<RunFigures> two = {run_of({-0.05, 0}), run_of({-0.05, 0.01})};
  auto t = calibrate(two, plain_profile());
  EXPECT_FALSE(t.metrics.at(0).warmup);
  EXPECT_NE(calibration_report(t).find("warm-up: not checked (each run needs 3 kept windows"),
            std::string::npos);
}

TEST(CalibrationTest, WindowAndLaunchComponentsAreTheOneWayAnovasMoments) {
  // Logs {0, .02}, {.10, .12}, {.05, .07}: within-run variance 0.0002 (sd
  // 1.4142 %); the means' variance 0.0025 less 0.0002 / 2 is 0.0024 (sd 4.8990 %).
  std::vector<RunFigures> runs = {run_of({0, 0.02}), run_of({0.10, 0.12}), run_of({0.05, 0.07})};
  auto c = calibrate(runs, plain_profile());
  ASSERT_EQ(c.metrics.size(), 1u);
  const auto& n = c.metrics[0];
  EXPECT_NEAR(n.window_sd_pct, 1.414213562, 1e-6);
  EXPECT_NEAR(n.launch_sd_pct, 4.898979486, 1e-6);
  EXPECT_FALSE(n.day_sd_pct) << "one day only";
  EXPECT_GT(n.launches, 0);
}

TEST(CalibrationTest, LaunchesThatDoNotDifferHaveNoLaunchComponent) {
  // Every run's windows alike: the means differ less than the windows predict.
  std::vector<RunFigures> runs = {run_of({0, 0.04}), run_of({0.01, 0.03}), run_of({0.005, 0.035})};
  auto n = calibrate(runs, plain_profile()).metrics.at(0);
  EXPECT_EQ(n.launch_sd_pct, 0);
  EXPECT_EQ(n.block, 20) << "without a launch effect, the longest block is cheapest";
}

TEST(CalibrationTest, TheDayComponentNeedsASecondDay) {
  std::vector<RunFigures> today = {run_of({0, 0.02}), run_of({0.04, 0.06})};
  CalibrationAsk ask;
  ask.earlier_days = {{run_of({0.20, 0.22}), run_of({0.24, 0.26})}};
  auto n = calibrate(today, plain_profile(), ask).metrics.at(0);
  // Today: window var 0.0002, launch var 0.0025*... = 0.0007. Day means of the
  // runs' figures (logs .02, .06 and .22, .26): .04 and .24, variance 0.02, less
  // (0.0007 + 0.0002 / 2) / 2 runs a day = 0.0196: sd 14.0 %.
  ASSERT_TRUE(n.day_sd_pct);
  EXPECT_NEAR(*n.day_sd_pct, 14.0, 1e-6);
}

TEST(CalibrationTest, KaliberaJonesBlockIsTheCostWeightedRatioOfSpreads) {
  // sqrt(launch cost / window cost) * window sd / launch sd = sqrt(2) * 4 = 5.657.
  EXPECT_EQ(optimal_block(4, 1, {2, 1}), 6);
  EXPECT_EQ(optimal_block(1, 4, {2, 1}), 1);
  EXPECT_EQ(optimal_block(4, 0, {2, 1}), 20);
  EXPECT_EQ(optimal_block(40, 1, {2, 1}, 10), 10);
}

// Issue 39, finding 8: the plan is the verdict's own (a fail needs the estimate
// past F and the interval past W, at the family's level), with the variance of
// a block's median and of the signed-rank estimate. Values from SciPy:
//   v = pi/3 * 2 * (0.04**2 + f * 0.02**2 / b)   (f = pi/2 for a block's median)
//   z = norm.ppf(1 - (1 - 0.9833)/2) + norm.ppf(0.8)
TEST(CalibrationTest, LaunchesToDetectAreTheVerdictsOwnCount) {
  // The finding's case: launch 4 %, window 2 %, limits 5 / 8 %, three metrics
  // (98.33 %). Detect +8 %, the fail limit itself: never with 80 % power.
  PlanLimits at_fail{5, 8, 8};
  EXPECT_EQ(launches_to_detect(2, 4, 1, at_fail, 98.333333333), 0);
  // Detect +10 %: max((z_.8 sd / ln(1.1/1.08))^2, (z sd / ln(1.1/1.05))^2) = 20.26 -> 21
  // (the formula this replaced planned 6 for +8 % and counted no family split).
  PlanLimits ten{5, 8, 10};
  EXPECT_EQ(launches_to_detect(2, 4, 1, ten, 98.333333333), 21);
  // Deciding between the limits (no --detect): (z sd / ln(1.08/1.05))^2 = 55.26 -> 56,
  // the finding's "needed 55" for a change at the fail limit.
  PlanLimits decide{5, 8, 0};
  EXPECT_EQ(launches_to_detect(2, 4, 1, decide, 98.333333333), 56);
  // A block of 4 windows: the window's share is its median's, pi/2 x var / 4: 48.55 -> 49.
  EXPECT_EQ(launches_to_detect(2, 4, 4, decide, 98.333333333), 49);
  // Never fewer than a signed-rank test needs to reach 98.33 % at all: 2 / 2^7 < 1.67 %.
  EXPECT_EQ(launches_to_detect(0.1, 0.1, 1, {5, 50, 0}, 98.333333333), 7);
}

}  // namespace
}  // namespace perfgate
