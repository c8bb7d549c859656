#include "perfgate/core/statistics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

// Reference values come from SciPy 1.10 (Debian 12's python3-scipy) unless a comment
// derives them by hand; R's equivalents are named where they are the classic source.

namespace perfgate {
namespace {

using stats::Interval;
using stats::TestResult;
using V = std::vector<double>;

// --- descriptive ---

TEST(StatisticsTest, MedianOddEvenAndOne) {
  EXPECT_DOUBLE_EQ(stats::median(V{3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(stats::median(V{4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(stats::median(V{7}), 7.0);
}

TEST(StatisticsTest, QuantileIsType7) {
  // numpy.quantile([1,2,3,4], 0.25) -> 1.75; R quantile(1:10, 0.9) -> 9.1
  EXPECT_DOUBLE_EQ(stats::quantile(V{4, 3, 2, 1}, 0.25), 1.75);
  V one_to_ten{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_NEAR(stats::quantile(one_to_ten, 0.9), 9.1, 1e-12);
  EXPECT_DOUBLE_EQ(stats::quantile(one_to_ten, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(stats::quantile(one_to_ten, 1.0), 10.0);
  EXPECT_DOUBLE_EQ(stats::quantile(V{5}, 0.3), 5.0);
  EXPECT_THROW(stats::quantile(one_to_ten, 1.5), std::invalid_argument);
}

TEST(StatisticsTest, MadScaledLikeRAndRaw) {
  // R mad(c(1,2,3,4,100)) -> 1.4826; scipy.stats.median_abs_deviation(...) -> 1.0
  EXPECT_NEAR(stats::mad(V{1, 2, 3, 4, 100}), 1.4826, 1e-12);
  EXPECT_DOUBLE_EQ(stats::mad(V{1, 2, 3, 4, 100}, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(stats::mad(V{5, 5, 5}), 0.0);
}

TEST(StatisticsTest, RanksAverageTies) {
  // scipy.stats.rankdata([10,20,20,30]) -> [1, 2.5, 2.5, 4]; ([3,1,3,3,2]) -> [4,1,4,4,2]
  EXPECT_EQ(stats::ranks(V{10, 20, 20, 30}), (V{1, 2.5, 2.5, 4}));
  EXPECT_EQ(stats::ranks(V{3, 1, 3, 3, 2}), (V{4, 1, 4, 4, 2}));
  EXPECT_EQ(stats::ranks(V{}), V{});
}

TEST(StatisticsTest, NormalDistribution) {
  // scipy.stats.norm.ppf(0.975) -> 1.959963984540054; norm.ppf(0.001) -> -3.090232306167813
  EXPECT_NEAR(stats::normal_quantile(0.975), 1.959963984540054, 1e-13);
  EXPECT_NEAR(stats::normal_quantile(0.001), -3.090232306167813, 1e-12);
  EXPECT_DOUBLE_EQ(stats::normal_quantile(0.5), 0.0);
  EXPECT_NEAR(stats::normal_cdf(1.0), 0.8413447460685429, 1e-15);
}

// --- Mann-Whitney ---

TEST(StatisticsTest, MannWhitneyExactTinySamples) {
  // scipy.stats.mannwhitneyu([1,2,3],[4,5,6], method='exact') -> U=0, p=0.1 (2/C(6,3))
  TestResult r = stats::mann_whitney(V{1, 2, 3}, V{4, 5, 6});
  EXPECT_TRUE(r.exact);
  EXPECT_DOUBLE_EQ(r.statistic, 0.0);
  EXPECT_NEAR(r.p_value, 0.1, 1e-12);
  // mannwhitneyu([1,2],[3,4], method='exact') -> p=1/3 (2/C(4,2))
  EXPECT_NEAR(stats::mann_whitney(V{1, 2}, V{3, 4}).p_value, 1.0 / 3.0, 1e-12);
  // one value each: U is 0 or 1 with equal chance, p=1
  EXPECT_DOUBLE_EQ(stats::mann_whitney(V{1}, V{2}).p_value, 1.0);
}

TEST(StatisticsTest, MannWhitneyExactClearShift) {
  // Complete separation of 10 and 10: p = 2 / C(20,10) = 2 / 184756
  V low{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, high{11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
  TestResult r = stats::mann_whitney(high, low);
  EXPECT_DOUBLE_EQ(r.statistic, 100.0);
  EXPECT_NEAR(r.p_value, 2.0 / 184756.0, 1e-15);
}

TEST(StatisticsTest, MannWhitneyExactOverlapping) {
  // mannwhitneyu([1.5,3.2,2.8,4.1,0.9,2.2],[3.9,5.0,4.4,2.5,6.1], method='exact')
  TestResult r = stats::mann_whitney(V{1.5, 3.2, 2.8, 4.1, 0.9, 2.2}, V{3.9, 5.0, 4.4, 2.5, 6.1});
  EXPECT_TRUE(r.exact);
  //   -> U=4, p=0.05194805194805195
  EXPECT_DOUBLE_EQ(r.statistic, 4.0);
  EXPECT_NEAR(r.p_value, 0.05194805194805195, 1e-12);
}

TEST(StatisticsTest, MannWhitneyNormalWithTies) {
  // mannwhitneyu([1,2,2,3,3,3],[3,4,4,5], method='asymptotic', use_continuity=True)
  //   -> U=1.5, p=0.026826219079541514
  TestResult r = stats::mann_whitney(V{1, 2, 2, 3, 3, 3}, V{3, 4, 4, 5});
  EXPECT_FALSE(r.exact);
  EXPECT_DOUBLE_EQ(r.statistic, 1.5);
  EXPECT_NEAR(r.p_value, 0.026826219079541514, 1e-12);
  // mannwhitneyu([10,11,12,12,13],[12,13,13,14,15,15,16], method='asymptotic')
  //   -> U=3, p=0.020875166954639274
  TestResult s = stats::mann_whitney(V{10, 11, 12, 12, 13}, V{12, 13, 13, 14, 15, 15, 16});
  EXPECT_DOUBLE_EQ(s.statistic, 3.0);
  EXPECT_NEAR(s.p_value, 0.020875166954639274, 1e-12);
}

TEST(StatisticsTest, MannWhitneyLargeSamplesUseNormal) {
  V x, y;
  for (int i = 0; i < 50; ++i) x.push_back(100 + (i * 37 % 50));
  for (int i = 0; i < 53; ++i) y.push_back(90 + (i * 29 % 53));
  // mannwhitneyu(x, y, method='asymptotic') with the same x and y
  //   -> U=1725.5, p=0.008296796393859674
  TestResult r = stats::mann_whitney(x, y);
  EXPECT_FALSE(r.exact);
  EXPECT_DOUBLE_EQ(r.statistic, 1725.5);
  EXPECT_NEAR(r.p_value, 0.008296796393859674, 1e-12);
}

TEST(StatisticsTest, MannWhitneyExactAtGateSizes) {
  // A run's 8 kept iterations against 5 pooled baseline runs, and the largest exact case.
  V now, base, x, y;
  for (int i = 0; i < 8; ++i) now.push_back(1000 + (i * 7 % 8) * 3.1);
  for (int i = 0; i < 40; ++i) base.push_back(1005 + (i * 17 % 40) * 1.3);
  // mannwhitneyu(now, base, method='exact') -> U=44, p=0.0006693379444917772
  TestResult r = stats::mann_whitney(now, base);
  EXPECT_TRUE(r.exact);
  EXPECT_DOUBLE_EQ(r.statistic, 44.0);
  EXPECT_NEAR(r.p_value, 0.0006693379444917772, 1e-15);
  for (int i = 0; i < 49; ++i) x.push_back(i * 13 % 49);
  for (int i = 0; i < 49; ++i) y.push_back(i * 11 % 49 + 3.5);
  // mannwhitneyu(x, y, method='exact') -> U=1035, p=0.24224097561872301
  TestResult big = stats::mann_whitney(x, y);
  EXPECT_TRUE(big.exact);
  EXPECT_DOUBLE_EQ(big.statistic, 1035.0);
  EXPECT_NEAR(big.p_value, 0.24224097561872301, 1e-12);
}

TEST(StatisticsTest, MannWhitneySwappingSamplesMirrorsU) {
  V a{1.5, 3.2, 2.8, 4.1, 0.9, 2.2}, b{3.9, 5.0, 4.4, 2.5, 6.1};
  TestResult ab = stats::mann_whitney(a, b), ba = stats::mann_whitney(b, a);
  EXPECT_DOUBLE_EQ(ab.statistic + ba.statistic, 30.0);
  EXPECT_DOUBLE_EQ(ab.p_value, ba.p_value);
}

TEST(StatisticsTest, MannWhitneyIdenticalAndAllEqual) {
  V a{3.1, 2.7, 5.0, 4.2};
  EXPECT_DOUBLE_EQ(stats::mann_whitney(a, a).p_value, 1.0);
  EXPECT_DOUBLE_EQ(stats::mann_whitney(V{5, 5, 5}, V{5, 5}).p_value, 1.0);
}

// --- Wilcoxon signed-rank ---

TEST(StatisticsTest, WilcoxonExact) {
  // R wilcox.test(1:5) -> V=15, p=0.0625 (2/2^5)
  TestResult r = stats::wilcoxon_signed_rank(V{1, 2, 3, 4, 5});
  EXPECT_TRUE(r.exact);
  EXPECT_DOUBLE_EQ(r.statistic, 15.0);
  EXPECT_NEAR(r.p_value, 0.0625, 1e-12);
  // scipy.stats.wilcoxon([0.3,-0.1,0.7,1.2,-0.4,0.9,1.5,0.2], method='exact');
  // SciPy reports min(W+, W-) = 5, R's V is W+ = 31
  TestResult s = stats::wilcoxon_signed_rank(V{0.3, -0.1, 0.7, 1.2, -0.4, 0.9, 1.5, 0.2});
  EXPECT_DOUBLE_EQ(s.statistic, 31.0);
  EXPECT_NEAR(s.p_value, 0.078125, 1e-12);
  EXPECT_DOUBLE_EQ(stats::wilcoxon_signed_rank(V{2.5}).p_value, 1.0);  // n=1: p = 2 * 1/2
}

TEST(StatisticsTest, WilcoxonNormalWithZerosAndTies) {
  // Zeros by Pratt's method, as scipy.stats.wilcoxon([0,1,-1,2,2,3,4,5],
  // zero_method='pratt', correction=True, method='approx') computes it: the zero
  // ranked (|d| ranks 1, 2.5, 2.5, 4.5, 4.5, 6, 7, 8) but not voting, W+ = 32.5;
  // mean 8*9/4 - 1*2/4 = 17.5; variance (8*9*17 - 1*2*3)/24 - (2 tied pairs:
  // 2*(2^3-2))/48 = 50.5; z = (32.5 - 17.5 - 0.5) / sqrt(50.5), p = erfc(z / sqrt 2)
  // = 0.04130722986886358 (by hand, Python's math.erfc). Wilcoxon's method, which
  // dropped the zero, gave W+ 26.5 and p 0.0418 (issue 39, finding 11).
  TestResult r = stats::wilcoxon_signed_rank(V{0, 1, -1, 2, 2, 3, 4, 5});
  EXPECT_FALSE(r.exact);
  EXPECT_DOUBLE_EQ(r.statistic, 32.5);
  EXPECT_NEAR(r.p_value, 0.04130722986886358, 1e-12);
  // Eight equal log-ratios: V=36, sigma^2 = 8*9*17/24 - (8^3-8)/48 = 40.5,
  // z = (36 - 18 - 0.5) / sqrt(40.5), p = erfc(z / sqrt 2); scipy.stats.wilcoxon([log(1.1)]*8,
  // correction=True, method='approx') -> p=0.005962078532093707
  V same(8, std::log(1.1));
  EXPECT_NEAR(stats::wilcoxon_signed_rank(same).p_value, 0.005962078532093707, 1e-12);
}

TEST(StatisticsTest, WilcoxonAllZeroIsNoEvidence) {
  TestResult r = stats::wilcoxon_signed_rank(V{0, 0, 0});
  EXPECT_DOUBLE_EQ(r.p_value, 1.0);
  EXPECT_DOUBLE_EQ(r.statistic, 0.0);
}

// --- Hodges-Lehmann ---

TEST(StatisticsTest, HodgesLehmannExactInterval) {
  // R wilcox.test(11:15, 1:5, conf.int=TRUE): estimate 10, 95% CI [7, 13]. By hand: the
  // 25 differences run 6..14; qwilcox(0.025, 5, 5) = 3 (P(U<=2)=4/252 < 0.025 <=
  // P(U<=3)=7/252), so the CI is the 3rd smallest and 3rd largest difference.
  Interval i = stats::hodges_lehmann(V{11, 12, 13, 14, 15}, V{1, 2, 3, 4, 5}, 0.95);
  EXPECT_DOUBLE_EQ(i.estimate, 10.0);
  EXPECT_DOUBLE_EQ(i.low, 7.0);
  EXPECT_DOUBLE_EQ(i.high, 13.0);
}

TEST(StatisticsTest, HodgesLehmannSwapFlipsSign) {
  V a{1.5, 3.2, 2.8, 4.1, 0.9, 2.2}, b{3.9, 5.0, 4.4, 2.5, 6.1};
  Interval ab = stats::hodges_lehmann(a, b, 0.9), ba = stats::hodges_lehmann(b, a, 0.9);
  EXPECT_DOUBLE_EQ(ab.estimate, -ba.estimate);
  EXPECT_DOUBLE_EQ(ab.low, -ba.high);
  EXPECT_DOUBLE_EQ(ab.high, -ba.low);
  // R's exact algorithm brute-forced in Python (qwilcox(0.05, 6, 5) by enumerating all
  // C(11,6) rank sets): estimate -1.9, 90% CI [-3.5, -0.3]
  EXPECT_NEAR(ab.estimate, -1.9, 1e-12);
  EXPECT_NEAR(ab.low, -3.5, 1e-12);
  EXPECT_NEAR(ab.high, -0.3, 1e-12);
}

TEST(StatisticsTest, HodgesLehmannNormalIntervalContainsEstimate) {
  V x, y;
  for (int i = 0; i < 60; ++i) x.push_back(100 + (i * 37 % 60) * 0.5);
  for (int i = 0; i < 60; ++i) y.push_back(95 + (i * 29 % 60) * 0.5);
  Interval i = stats::hodges_lehmann(x, y, 0.95);
  EXPECT_DOUBLE_EQ(i.estimate, 5.0);  // y is x shifted down by 5, in another order
  EXPECT_LT(i.low, 5.0);
  EXPECT_GT(i.high, 5.0);
}

TEST(StatisticsTest, HodgesLehmannPairedExact) {
  // R wilcox.test(1:5, conf.int=TRUE): pseudomedian 3, CI [1, 5]. qsignrank(0.025, 5)
  // is 0 (P(V=0)=1/32 >= 0.025), raised to 1: the extreme Walsh averages.
  Interval i = stats::hodges_lehmann_paired(V{1, 2, 3, 4, 5}, 0.95);
  EXPECT_DOUBLE_EQ(i.estimate, 3.0);
  EXPECT_DOUBLE_EQ(i.low, 1.0);
  EXPECT_DOUBLE_EQ(i.high, 5.0);
}

// --- bootstrap ---

TEST(StatisticsTest, BootstrapIsDeterministicForASeed) {
  V now{101, 99, 104, 98, 102, 100, 97, 103}, base{110, 108, 112, 109, 111, 107, 113, 110};
  Interval a = stats::bootstrap_median_ratio(now, base, 0.95, 42);
  Interval b = stats::bootstrap_median_ratio(now, base, 0.95, 42);
  EXPECT_EQ(a.low, b.low);
  EXPECT_EQ(a.high, b.high);
  EXPECT_DOUBLE_EQ(a.estimate, 100.5 / 110.0);
  EXPECT_LE(a.low, a.estimate);
  EXPECT_GE(a.high, a.estimate);
  EXPECT_LT(a.high, 1.0);  // a 9 % drop with this little spread is clear
  // Pinned from this implementation (not an outside reference): mt19937_64's output is
  // fixed by the standard and the index draw is ours, so any platform must agree. The
  // ends are ratios of resampled medians, 99.5 / 112 and 102 / 108.5.
  EXPECT_NEAR(a.low, 99.5 / 112.0, 1e-12);
  EXPECT_NEAR(a.high, 102.0 / 108.5, 1e-12);
  Interval c = stats::bootstrap_median_ratio(now, base, 0.95, 43);
  EXPECT_TRUE(c.low != a.low || c.high != a.high);
}

TEST(StatisticsTest, BootstrapRejectsNonPositiveBaseline) {
  EXPECT_THROW(stats::bootstrap_median_ratio(V{1, 2}, V{0, 1}, 0.95, 1), std::invalid_argument);
  EXPECT_THROW(stats::bootstrap_median_ratio(V{1, 2}, V{1, 2}, 0.95, 1, 0), std::invalid_argument);
}

// --- entry points ---

TEST(StatisticsTest, EstimateChangeClearDrop) {
  V base{1000, 1010, 990, 1005, 995, 1002, 998, 1008};
  V now{900, 905, 895, 910, 890, 902, 898, 907};
  ChangeEstimate e = estimate_change(now, base, 0.95);
  EXPECT_NEAR(e.change_pct, -10.0, 0.5);
  EXPECT_LE(e.ci_low_pct, e.change_pct);
  EXPECT_GE(e.ci_high_pct, e.change_pct);
  EXPECT_LT(e.ci_high_pct, 0.0);
  // mannwhitneyu(now, base, method='exact') -> p=0.0001554001554001554 = 2 / C(16,8)
  EXPECT_NEAR(e.p_value, 0.0001554001554001554, 1e-15);
  EXPECT_EQ(e.n_now, 8);
  EXPECT_EQ(e.n_base, 8);
  EXPECT_EQ(e.method, "mann-whitney+hodges-lehmann (exact)");
}

TEST(StatisticsTest, EstimateChangeByHand) {
  // Shift 10 (see HodgesLehmannExactInterval) over the baseline median 3, in percent.
  ChangeEstimate e = estimate_change(V{11, 12, 13, 14, 15}, V{1, 2, 3, 4, 5}, 0.95);
  EXPECT_NEAR(e.change_pct, 1000.0 / 3.0, 1e-9);
  EXPECT_NEAR(e.ci_low_pct, 700.0 / 3.0, 1e-9);
  EXPECT_NEAR(e.ci_high_pct, 1300.0 / 3.0, 1e-9);
  // mannwhitneyu(11:15, 1:5, method='exact') -> p=0.007936507936507936 = 2/252
  EXPECT_NEAR(e.p_value, 0.007936507936507936, 1e-15);
}

TEST(StatisticsTest, EstimateChangeIdenticalAndAllEqual) {
  V a{3.1, 2.7, 5.0, 4.2};
  ChangeEstimate same = estimate_change(a, a, 0.95);
  EXPECT_DOUBLE_EQ(same.change_pct, 0.0);
  EXPECT_DOUBLE_EQ(same.p_value, 1.0);
  EXPECT_LE(same.ci_low_pct, 0.0);
  EXPECT_GE(same.ci_high_pct, 0.0);
  ChangeEstimate flat = estimate_change(V{5, 5, 5}, V{5, 5, 5, 5}, 0.95);
  EXPECT_DOUBLE_EQ(flat.change_pct, 0.0);
  EXPECT_DOUBLE_EQ(flat.ci_low_pct, 0.0);
  EXPECT_DOUBLE_EQ(flat.ci_high_pct, 0.0);
  EXPECT_DOUBLE_EQ(flat.p_value, 1.0);
  EXPECT_EQ(flat.method, "mann-whitney+hodges-lehmann (normal)");
}

TEST(StatisticsTest, EstimateChangeOneValueEach) {
  ChangeEstimate e = estimate_change(V{110}, V{100}, 0.95);
  EXPECT_DOUBLE_EQ(e.change_pct, 10.0);
  EXPECT_DOUBLE_EQ(e.p_value, 1.0);  // one pair can never be significant
}

TEST(StatisticsTest, EstimatePairedChangeIsGeometric) {
  V base{100, 200, 50, 400, 120, 80, 300, 150};
  V now;
  for (double b : base) now.push_back(b * 1.1);
  ChangeEstimate e = estimate_paired_change(now, base, 0.95);
  EXPECT_NEAR(e.change_pct, 10.0, 1e-9);
  EXPECT_NEAR(e.ci_low_pct, 10.0, 1e-9);
  EXPECT_NEAR(e.ci_high_pct, 10.0, 1e-9);
  EXPECT_NEAR(e.p_value, 0.005962078532093707, 1e-12);  // see WilcoxonNormalWithZerosAndTies
  EXPECT_EQ(e.method, "wilcoxon-signed-rank+hodges-lehmann on log-ratios (normal)");
  // The ratio's inverse: -1/11 of the value, not -10 %.
  EXPECT_NEAR(estimate_paired_change(base, now, 0.95).change_pct, -100.0 / 11.0, 1e-9);
}

TEST(StatisticsTest, EstimatePairedChangeExactNoisy) {
  V base{100, 102, 98, 101, 99, 103, 97, 100};
  V now{95, 97, 94, 96, 95.5, 96.5, 93, 94.2};
  ChangeEstimate e = estimate_paired_change(now, base, 0.95);
  // scipy.stats.wilcoxon(log(now/base), method='exact') -> 0, p=0.0078125 (every pair
  // dropped). Estimate and CI: R's exact algorithm brute-forced in Python over all 2^8
  // sign patterns, then (exp(x) - 1) * 100.
  EXPECT_NEAR(e.p_value, 0.0078125, 1e-12);
  EXPECT_NEAR(e.change_pct, -4.929687414514641, 1e-9);
  EXPECT_NEAR(e.ci_low_pct, -5.657615904127143, 1e-9);
  EXPECT_NEAR(e.ci_high_pct, -4.081632653061229, 1e-9);
  EXPECT_EQ(e.method, "wilcoxon-signed-rank+hodges-lehmann on log-ratios (exact)");
  ChangeEstimate same = estimate_paired_change(base, base, 0.95);
  EXPECT_DOUBLE_EQ(same.change_pct, 0.0);
  EXPECT_DOUBLE_EQ(same.p_value, 1.0);
}

// --- degenerate input: always std::invalid_argument, never a made-up number ---

TEST(StatisticsTest, EmptyInputsThrow) {
  V none, some{1, 2, 3};
  EXPECT_THROW(stats::median(none), std::invalid_argument);
  EXPECT_THROW(stats::quantile(none, 0.5), std::invalid_argument);
  EXPECT_THROW(stats::mad(none), std::invalid_argument);
  EXPECT_THROW(stats::mann_whitney(none, some), std::invalid_argument);
  EXPECT_THROW(stats::mann_whitney(some, none), std::invalid_argument);
  EXPECT_THROW(stats::wilcoxon_signed_rank(none), std::invalid_argument);
  EXPECT_THROW(stats::hodges_lehmann(none, some, 0.95), std::invalid_argument);
  EXPECT_THROW(stats::hodges_lehmann_paired(none, 0.95), std::invalid_argument);
  EXPECT_THROW(stats::bootstrap_median_ratio(none, some, 0.95, 1), std::invalid_argument);
  EXPECT_THROW(estimate_change(none, some, 0.95), std::invalid_argument);
  EXPECT_THROW(estimate_paired_change(none, none, 0.95), std::invalid_argument);
}

TEST(StatisticsTest, EmptyInputMessageSaysWhich) {
  try {
    estimate_change(V{1, 2}, V{}, 0.95);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "estimate_change: baseline: needs at least one value, got none");
  }
}

TEST(StatisticsTest, OtherBadInputsThrow) {
  V some{1, 2, 3};
  EXPECT_THROW(estimate_change(some, V{0, 0, 1}, 0.95), std::invalid_argument);  // median 0
  EXPECT_THROW(estimate_change(some, some, 1.0), std::invalid_argument);
  EXPECT_THROW(estimate_change(some, some, 0.0), std::invalid_argument);
  EXPECT_THROW(estimate_change(some, V{1, NAN}, 0.95), std::invalid_argument);
  EXPECT_THROW(estimate_paired_change(some, V{1, 2}, 0.95), std::invalid_argument);
  EXPECT_THROW(estimate_paired_change(some, V{1, 0, 3}, 0.95), std::invalid_argument);
  EXPECT_THROW(stats::ranks(V{1, NAN}), std::invalid_argument);
  EXPECT_THROW(stats::normal_quantile(1.0), std::invalid_argument);
}

}  // namespace
}  // namespace perfgate

namespace perfgate {
namespace {

// R's pt() and qt(), and the closed forms for df = 1 (Cauchy), 2 and 3.
TEST(StudentT, DistributionFunctionMatchesR) {
  EXPECT_NEAR(stats::student_t_cdf(2.0, 5), 0.9490303, 1e-7);
  // df = 3: F(t) = 1/2 + (u / (1 + u^2) + atan(u)) / pi with u = t / sqrt(3).
  double u = -1.5 / std::sqrt(3.0);
  EXPECT_NEAR(stats::student_t_cdf(-1.5, 3), 0.5 + (u / (1 + u * u) + std::atan(u)) / M_PI, 1e-12);
  EXPECT_NEAR(stats::student_t_cdf(1.0, 1), 0.75, 1e-12);
  EXPECT_NEAR(stats::student_t_cdf(1.0, 2), 0.5 + 1 / (2 * std::sqrt(3.0)), 1e-12);
  EXPECT_DOUBLE_EQ(stats::student_t_cdf(0.0, 7), 0.5);
  EXPECT_THROW(stats::student_t_cdf(1.0, 0), std::invalid_argument);
}

TEST(StudentT, QuantileMatchesR) {
  EXPECT_NEAR(stats::student_t_quantile(0.975, 4), 2.776445, 1e-6);
  EXPECT_NEAR(stats::student_t_quantile(0.975, 1), 12.7062, 1e-4);
  EXPECT_NEAR(stats::student_t_quantile(0.95, 10), 1.812461, 1e-6);
  EXPECT_NEAR(stats::student_t_quantile(0.025, 4), -2.776445, 1e-6);
  EXPECT_THROW(stats::student_t_quantile(1.0, 4), std::invalid_argument);
}

// SciPy 1.10's t.ppf, to 1e-8 relative: the levels a count's two looks and a
// sequential gate judge at, and the median, where bisection stopped 2.7e-6
// short of 0 at 100000 df.
TEST(StudentT, QuantileMatchesScipyAtTheLevelsJudgedAndAtTheMedian) {
  struct Known {
    double p, df, q;
  };
  for (auto k : {Known{0.99375, 2, 8.860200034654257}, Known{0.999, 7, 4.785289628649168},
                 Known{0.0001, 22, -4.451992732287344}, Known{0.9, 3, 1.637744357215907},
                 Known{0.9975, 100, 2.870651521931083}})
    EXPECT_NEAR(stats::student_t_quantile(k.p, k.df), k.q, 1e-8 * std::fabs(k.q))
        << k.p << " at " << k.df << " df";
  for (double df : {2.0, 43.0, 1000.0, 100000.0})
    EXPECT_NEAR(stats::student_t_quantile(0.5, df), 0, 1e-12) << df;
}

// One run against five: the prediction interval on log figures, by hand.
TEST(RunChange, IsTheTPredictionTestOnLogFigures) {
  std::vector<double> runs = {100, 110, 90, 105, 95};
  double mean = 0;
  for (double v : runs) mean += std::log(v) / 5;
  double ss = 0;
  for (double v : runs) ss += std::pow(std::log(v) - mean, 2);
  double scale = std::sqrt(ss / 4) * std::sqrt(1.2);
  double t = (std::log(80.0) - mean) / scale;
  auto e = estimate_run_change(80, runs, 0.95);
  EXPECT_NEAR(e.p_value, 2 * stats::student_t_cdf(t, 4), 1e-12);
  EXPECT_NEAR(e.change_pct, (std::exp(std::log(80.0) - mean) - 1) * 100, 1e-9);
  double half = 2.776445 * scale;
  EXPECT_NEAR(e.ci_low_pct, std::expm1(std::log(80.0) - mean - half) * 100, 1e-3);
  EXPECT_GT(e.ci_low_pct, -100);  // a log interval never reaches below -100 %
  EXPECT_EQ(e.n_base, 5);
  EXPECT_NE(e.method.find("run-level t (5 runs)"), std::string::npos);
}

TEST(RunChange, SteadyRunsMakeAnyDifferenceSignificantAndEqualityNot) {
  std::vector<double> same = {1000, 1000, 1000};
  EXPECT_EQ(estimate_run_change(1001, same, 0.95).p_value, 0);
  EXPECT_EQ(estimate_run_change(1000, same, 0.95).p_value, 1);
  // Zero or negative figures fall back to differences relative to the mean.
  std::vector<double> with_zero = {0, 2, 4};
  auto e = estimate_run_change(2, with_zero, 0.95);
  EXPECT_NEAR(e.change_pct, 0, 1e-12);
  EXPECT_THROW(estimate_run_change(1, std::vector<double>{1000}, 0.95), std::invalid_argument);
  EXPECT_THROW(estimate_run_change(1, same, 1.5), std::invalid_argument);
}

// 80 % power in half-widths of the interval. SciPy 1.10:
// 1 + norm.ppf(0.8) / norm.ppf(0.975) and 1 + t.ppf(0.8, 4) / t.ppf(0.975, 4).
TEST(Power, MultiplierOfTheHalfWidthMatchesScipy) {
  EXPECT_NEAR(stats::power_multiplier(0.95, 0.8), 1.4294064790024281, 1e-12);
  EXPECT_NEAR(stats::power_multiplier(0.95, 0.8, 4), 1.3389098438992886, 1e-9);
  // 1 + norm.ppf(0.8) / norm.ppf(1 - 0.05 / 3 / 2): a family of three at 95 %.
  EXPECT_NEAR(stats::power_multiplier(1 - 0.05 / 3, 0.8), 1.3515573663723972, 1e-12);
}

// Wilson's score bound, one-sided: (p + z^2/2n - z sqrt(p(1-p)/n + z^2/4n^2)) /
// (1 + z^2/n) with z = norm.ppf(confidence), evaluated with SciPy 1.10.
TEST(Binomial, WilsonLowerBoundMatchesScipy) {
  EXPECT_NEAR(stats::wilson_lower_bound(32, 36000, 0.975), 0.0006297442861216218, 1e-15);
  EXPECT_NEAR(stats::wilson_lower_bound(60, 36000, 0.975), 0.0012951521298889702, 1e-15);
  EXPECT_NEAR(stats::wilson_lower_bound(5, 100, 0.95), 0.02454736342580413, 1e-14);
  EXPECT_EQ(stats::wilson_lower_bound(0, 100, 0.95), 0);
  EXPECT_THROW(stats::wilson_lower_bound(5, 4, 0.95), std::invalid_argument);
  EXPECT_THROW(stats::wilson_lower_bound(0, 0, 0.95), std::invalid_argument);
}

// R's wilcox.test warns "requested conf.level not achievable" where the exact
// critical value is 0; the interval then says it does not reach the level.
TEST(HodgesLehmann, SaysWhenTheSamplesCannotReachTheLevel) {
  std::vector<double> six = {-0.1, -0.11, -0.09, -0.1, -0.12, -0.08};
  EXPECT_TRUE(stats::hodges_lehmann_paired(six, 0.95).reaches_level);   // 1/64 < 0.025
  EXPECT_FALSE(stats::hodges_lehmann_paired(six, 0.99).reaches_level);  // 1/64 > 0.005
  std::vector<double> two_a = {1, 2}, two_b = {3, 4};
  EXPECT_FALSE(stats::hodges_lehmann(two_a, two_b, 0.95).reaches_level);  // 2x2: p >= 1/3
  std::vector<double> four_a = {1, 2, 3, 4}, four_b = {5, 6, 7, 8};
  EXPECT_TRUE(stats::hodges_lehmann(four_a, four_b, 0.95).reaches_level);  // 1/70 < 0.025
  // Ties send the interval to the normal approximation, which alone would say
  // that 7 pairs cannot reach 98.33 %; all one way, they can (2/128 < 1/60).
  std::vector<double> tied = {0.01, 0.01, 0.02, 0.01, 0.03, 0.01, 0.02};
  EXPECT_TRUE(stats::hodges_lehmann_paired(tied, 1 - 0.05 / 3).reaches_level);
  // Zeros do not vote: two nonzero pairs cannot reach it (2/4 > 1/60).
  std::vector<double> zeros = {0, 0, 0, 0, 0, 0.01, 0.02};
  EXPECT_FALSE(stats::hodges_lehmann_paired(zeros, 1 - 0.05 / 3).reaches_level);
  std::vector<double> ones(6, 1.0), twos = {2, 2.1, 2.2, 2.3, 2.4, 2.5};
  EXPECT_FALSE(estimate_paired_change(ones, twos, 0.99).reaches_level);
}

}  // namespace
}  // namespace perfgate
