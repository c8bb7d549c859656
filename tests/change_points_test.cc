#include "perfgate/core/change_points.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace perfgate {
namespace {

// Standard normal draws from a standardized generator (Box-Muller): the same
// series on every standard library, unlike std::normal_distribution.
class Normal {
 public:
  explicit Normal(uint64_t seed) : rng_(seed) {}
  double operator()() {
    double u1 = (static_cast<double>(rng_() >> 11) + 0.5) / 9007199254740992.0;
    double u2 = static_cast<double>(rng_() >> 11) / 9007199254740992.0;
    return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
  }

 private:
  std::mt19937_64 rng_;
};

// `runs` figures around 1000 with lognormal noise of `noise` (0.01: about 1 %),
// times 1 + `step` from index `at` on.
std::vector<double> history(uint64_t seed, size_t runs = 60, double noise = 0.01, size_t at = 0,
                            double step = 0) {
  Normal normal(seed);
  std::vector<double> out;
  for (size_t i = 0; i < runs; ++i)
    out.push_back(1000 * std::exp(noise * normal()) * (step != 0 && i >= at ? 1 + step : 1));
  return out;
}

// `runs` figures around 1000 whose logs are an AR(1) with coefficient `rho` and
// sd `noise` (stationary from the first run): a machine whose slow spells last
// a few runs. Times 1 + `step` from index `at` on.
std::vector<double> ar1_history(uint64_t seed, size_t runs, double rho, double noise, size_t at = 0,
                                double step = 0) {
  Normal normal(seed);
  std::vector<double> out;
  double e = noise * normal();
  for (size_t i = 0; i < runs; ++i) {
    if (i > 0) e = rho * e + std::sqrt(1 - rho * rho) * noise * normal();
    out.push_back(1000 * std::exp(e) * (i >= at ? 1 + step : 1));
  }
  return out;
}

// Three runs a day: the runs of a day share its effect (sd `day_sd`), each has
// its own noise (sd `run_sd`) besides.
std::vector<double> daily_history(uint64_t seed, size_t runs, double day_sd, double run_sd) {
  Normal normal(seed);
  std::vector<double> out;
  double day = 0;
  for (size_t i = 0; i < runs; ++i) {
    if (i % 3 == 0) day = day_sd * normal();
    out.push_back(1000 * std::exp(day + run_sd * normal()));
  }
  return out;
}

TEST(ChangePointTest, StatisticMatchesItsDefinition) {
  // x = {0, 0}, y = {1, 1}: across 4 pairs of 1, none within: q = 1 * (2 * 4 / 4) = 2.
  std::vector<double> z = {0, 0, 1, 1};
  EXPECT_DOUBLE_EQ(e_divisive_statistic(z, 2), 2.0);
  // x = {0, 1}, y = {0, 1}: across sum 2, within 1 each: 1 * (2*2/4 - 2*1/2 - 2*1/2) = -1.
  std::vector<double> mixed = {0, 1, 0, 1};
  EXPECT_DOUBLE_EQ(e_divisive_statistic(mixed, 2), -1.0);
  EXPECT_THROW(e_divisive_statistic(z, 1), std::invalid_argument);
}

TEST(ChangePointTest, FindsAPlantedFivePercentStepWithinThreeRuns) {
  int found = 0, extra = 0;
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    size_t at = 20 + seed % 21;  // the step anywhere from run 20 to run 40 of 60
    auto series = history(seed, 60, 0.01, at, 0.05);
    auto points = find_change_points(series);
    bool near = false;
    for (const auto& cp : points) {
      long distance = std::labs(static_cast<long>(cp.index) - static_cast<long>(at));
      if (distance <= 3) {
        near = true;
        EXPECT_NEAR(cp.relative_size, 0.05, 0.015)
            << "seed " << seed;  // a false split nearby shortens a side
        EXPECT_LE(cp.p, kChangePointMaxP);
      } else {
        ++extra;
      }
    }
    EXPECT_TRUE(near) << "seed " << seed << ": step at " << at << " not found";
    found += near;
  }
  EXPECT_EQ(found, 100);
  // Further splits of either level are false alarms, at the A/A rate or so.
  EXPECT_LE(extra, 5);
  RecordProperty("extra_change_points", extra);
}

// The false-alarm rate docs/statistics.md states: 200 A/A histories of 60 runs
// at 1 % noise. Each test fires with probability 0.005 by construction; the
// measured count is 1 of 200 (0.5 %), asserted with margin.
TEST(ChangePointTest, FalseAlarmRateOnAAHistoriesIsAsDocumented) {
  int alarmed = 0;
  for (uint64_t seed = 1001; seed <= 1200; ++seed)
    alarmed += !find_change_points(history(seed)).empty();
  EXPECT_LE(alarmed, 4) << alarmed << " of 200 A/A histories had a change point";
  RecordProperty("aa_histories_with_change_point", alarmed);
}

// Issue 39: the runs of one machine are not exchangeable. 200 histories of 25
// runs, their logs an AR(1) with rho 0.5 and 1 % sd, no step: with the values
// shuffled (and levels of 3 runs), 24 of these 200 were split; now 6 (of 1000
// such histories: 36, 3.6 %), asserted at most 5 %. Without a least step: with
// a 3 % one, none.
TEST(ChangePointTest, AutocorrelatedHistoriesWithoutAStepAreRarelySplit) {
  int split = 0;
  for (uint64_t seed = 8001; seed <= 8200; ++seed)
    split += !find_change_points(ar1_history(seed, 25, 0.5, 0.01)).empty();
  EXPECT_LE(split, 10) << split << " of 200 AR(1) histories had a change point";
  RecordProperty("ar1_histories_with_change_point", split);
}

// Three runs a day, a day effect as large as the run's own noise (1 % each),
// 25 runs: values shuffled, 27 of these 400 were split (6.8 %); now 4 (of 1000
// others: 19, 1.9 %), asserted at most 5 %.
TEST(ChangePointTest, HistoriesWithADayEffectAreRarelySplit) {
  int split = 0;
  for (uint64_t seed = 9001; seed <= 9400; ++seed)
    split += !find_change_points(daily_history(seed, 25, 0.01, 0.01)).empty();
  EXPECT_LE(split, 20) << split << " of 400 day-effect histories had a change point";
  RecordProperty("day_effect_histories_with_change_point", split);
}

// What allowing for the correlation costs: a step of twice a 3 % warn limit in
// 25 runs with rho 0.5 and 1.5 % sd, anywhere from run 8 to 17, is found within
// 2 runs in 182 of these 200 histories (of 1000 others: 874, 87 %; values
// shuffled: all 200), asserted at least 80 %.
TEST(ChangePointTest, FindsAStepOfTwiceTheWarnLimitDespiteAutocorrelation) {
  int found = 0;
  for (uint64_t seed = 10001; seed <= 10200; ++seed) {
    size_t at = 8 + seed % 10;
    bool near = false;
    for (const auto& cp : find_change_points(ar1_history(seed, 25, 0.5, 0.015, at, 0.06), 0.03))
      near = near || std::labs(static_cast<long>(cp.index) - static_cast<long>(at)) <= 2;
    found += near;
  }
  EXPECT_GE(found, 160) << found << " of 200 steps found";
  RecordProperty("steps_found", found);
}

// A step smaller than the least step asked for is no level: its two sides are
// one, and the steps left are sized against that.
TEST(ChangePointTest, AStepBelowTheLeastStepIsDroppedAndItsLevelsMerged) {
  std::vector<double> series;
  for (int i = 0; i < 45; ++i)
    series.push_back((i < 15 ? 1000 : i < 30 ? 1020 : 1122) + (i % 3) * 0.1);
  auto all = find_change_points(series);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_NEAR(all[0].relative_size, 0.02, 1e-3);
  auto large = find_change_points(series, 0.03);
  ASSERT_EQ(large.size(), 1u);
  EXPECT_EQ(large[0].index, 30u);
  // Against the median of the 30 runs before it, 1010: +11.1 %, not +10 %.
  EXPECT_NEAR(large[0].relative_size, 1122.0 / 1010.05 - 1, 1e-3);
  // A drop counts by its size too.
  std::vector<double> drop(series.rbegin(), series.rend());
  ASSERT_EQ(find_change_points(drop, 0.03).size(), 1u);
  EXPECT_TRUE(find_change_points(series, 0.2).empty());
}

// A step with fewer runs after it than a level is no change point yet, and is
// not put on the last run of the old level instead (the best split a level
// away from the end would do that): it is found once its fifth run stands.
TEST(ChangePointTest, AStepTooRecentForALevelIsNotReportedEarly) {
  std::vector<double> series;
  for (int i = 0; i < 14; ++i) series.push_back((i < 10 ? 1000 : 500) + i % 3);
  EXPECT_TRUE(find_change_points(series).empty());
  std::vector<double> reversed(series.rbegin(), series.rend());  // four runs of an old level
  EXPECT_TRUE(find_change_points(reversed).empty());
  series.push_back(501);
  auto points = find_change_points(series);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].index, 10u);
}

TEST(ChangePointTest, AConstantOrShortSeriesHasNone) {
  EXPECT_TRUE(find_change_points(std::vector<double>(60, 1000.0)).empty());
  EXPECT_TRUE(find_change_points(std::vector<double>{}).empty());
  // Shorter than two minimum segments: no split can be tested, however clear.
  EXPECT_TRUE(find_change_points(std::vector<double>{1, 1, 1, 1, 9, 9, 9, 9, 9}).empty());
  EXPECT_THROW(find_change_points(std::vector<double>{1, NAN, 1}), std::invalid_argument);
}

TEST(ChangePointTest, FindsTwoStepsAndSizesEachAgainstItsNeighbours) {
  std::vector<double> series;
  for (int i = 0; i < 20; ++i) series.push_back(100 + (i % 3) * 0.1);
  for (int i = 0; i < 20; ++i) series.push_back(110 + (i % 3) * 0.1);
  for (int i = 0; i < 20; ++i) series.push_back(99 + (i % 3) * 0.1);
  auto points = find_change_points(series);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].index, 20u);
  EXPECT_EQ(points[1].index, 40u);
  EXPECT_NEAR(points[0].relative_size, 0.10, 1e-3);
  EXPECT_NEAR(points[1].relative_size, 99.1 / 110.1 - 1, 1e-3);
  EXPECT_EQ(find_change_points(series), points);  // deterministic
}

// Zeros (an error rate) are searched on the values themselves; a step from a
// median of 0 has no relative size.
TEST(ChangePointTest, ZerosAreSearchedWithoutLogs) {
  std::vector<double> series(16, 0.0);
  for (size_t i = 8; i < 16; ++i) series[i] = 2.0 + 0.01 * static_cast<double>(i % 3);
  auto points = find_change_points(series);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].index, 8u);
  EXPECT_TRUE(std::isnan(points[0].relative_size));
}

// The two series of Hunter's (now Apache Otava's) own test_change_point_detection:
// series1 drops by half at index 6, series2 by 10 % at index 4. Both are found
// there by Otava, whose significance test is a t-test. series1's step is found
// at 6 here too; series2's is not: its first level has 4 runs, fewer than
// kChangePointMinSegment (and a permutation test of 11 values split 4/7 has
// 330 orderings, the observed one and its mirror image as extreme, so p could
// not fall below ~0.006 > kChangePointMaxP anyway). With three more runs
// before the step it is found (below).
TEST(ChangePointTest, MatchesOtavasDocumentedExampleWhereItsResolutionAllows) {
  std::vector<double> series1 = {1.02, 0.95, 0.99, 1.00, 1.12, 0.90, 0.50, 0.51, 0.48, 0.48, 0.55};
  auto points = find_change_points(series1);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].index, 6u);
  EXPECT_NEAR(points[0].relative_size, 0.50 / 0.995 - 1, 1e-3);
  std::vector<double> series2 = {2.02, 2.03, 2.01, 2.04, 1.82, 1.85, 1.79, 1.81, 1.80, 1.76, 1.78};
  EXPECT_TRUE(find_change_points(series2).empty());
  std::vector<double> longer = {2.03, 2.02, 2.04, 2.02, 2.03, 2.01, 2.04,
                                1.82, 1.85, 1.79, 1.81, 1.80, 1.76, 1.78};
  points = find_change_points(longer);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].index, 7u);
}

}  // namespace
}  // namespace perfgate
