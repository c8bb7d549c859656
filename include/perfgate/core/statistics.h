#pragma once

// Distribution-free statistics behind the noise-aware verdict: rank tests,
// Hodges-Lehmann shifts with their confidence intervals, and a seeded bootstrap.
// Pure functions of value spans; see docs/statistics.md for the formulas.
//
// Error convention: inputs that cannot give an answer (an empty span, a NaN, a
// confidence outside (0, 1), a zero baseline median for a relative change) throw
// std::invalid_argument with a message that says which argument and why.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace perfgate {
namespace stats {

/// Median; the mean of the two middle values for an even count.
double median(std::span<const double> values);
/// Sample quantile of type 7 (R's default, numpy's "linear"): interpolates between
/// order statistics at h = (n - 1) * p. `p` in [0, 1].
double quantile(std::span<const double> values, double p);
/// Median absolute deviation from the median, times `scale`. The default 1.4826 makes it
/// estimate the standard deviation of normal data, as R's mad() does; pass 1 for the raw MAD.
double mad(std::span<const double> values, double scale = 1.4826);
/// Ranks 1..n in input order; tied values share the average of their ranks.
std::vector<double> ranks(std::span<const double> values);

/// Standard normal distribution function, Phi(z).
double normal_cdf(double z);
/// Its inverse, for p in (0, 1); accurate to about 1e-15.
double normal_quantile(double p);

/// Student's t distribution function with `df` > 0 degrees of freedom.
double student_t_cdf(double t, double df);
/// Its inverse, for p in (0, 1).
double student_t_quantile(double p, double df);

/// Upper tail of the F distribution with (d1, d2) degrees of freedom: P(F > f).
double f_distribution_sf(double f, double d1, double d2);

/// A rank test's outcome.
struct TestResult {
  double statistic = 0;  // Mann-Whitney U of the first sample, or Wilcoxon's V
  double p_value = 1;    // two-sided
  bool exact = false;    // exact null distribution, else normal approximation
};

/// Mann-Whitney U (Wilcoxon rank-sum) test of `x` against `y`, two-sided. Exact when
/// both samples are smaller than 50 and have no ties (R's wilcox.test rule), else the
/// normal approximation with tie and continuity corrections.
TestResult mann_whitney(std::span<const double> x, std::span<const double> y);

/// Wilcoxon signed-rank test that paired `differences` are centred on zero, two-sided.
/// Zero differences are dropped (Wilcoxon's method, R's and SciPy's default). Exact when
/// fewer than 50 remain and there were neither ties nor zeros, else the normal
/// approximation with tie and continuity corrections.
TestResult wilcoxon_signed_rank(std::span<const double> differences);

/// A point estimate with its confidence interval.
struct Interval {
  double estimate = 0;
  double low = 0;
  double high = 0;
  /// False when the samples are too small for any interval at the confidence
  /// asked: low..high is then the widest one available, of lower confidence.
  bool reaches_level = true;
};

/// Hodges-Lehmann shift of `x` relative to `y`: the median of all differences x_i - y_j,
/// with the distribution-free interval read off the sorted differences at Mann-Whitney
/// critical values (exact as R for small samples without ties, normal otherwise).
Interval hodges_lehmann(std::span<const double> x, std::span<const double> y, double confidence);

/// Hodges-Lehmann estimate for paired data: the median of the Walsh averages
/// (d_i + d_j) / 2, i <= j, with the interval at signed-rank critical values.
Interval hodges_lehmann_paired(std::span<const double> differences, double confidence);

/// How far past the interval's half-width a true change must lie to be detected
/// (an interval clear of zero) with probability `power`, as a multiple of the
/// half-width: 1 + q(power) / q(1 - alpha / 2), q the quantile of Student's t with
/// `df` degrees of freedom, or of the normal for `df` 0 (the rank tests). 1.43 for
/// 95 % and 80 % power with a normal statistic.
double power_multiplier(double confidence, double power, double df = 0);

/// One-sided lower confidence bound of a binomial proportion (Wilson's score
/// interval): the smallest rate that `events` in `trials` leave plausible at
/// `confidence`. 0 for no events; throws std::invalid_argument on trials < events,
/// trials 0 or a confidence outside (0, 1).
double wilson_lower_bound(double events, double trials, double confidence);

/// Percentile bootstrap of median(now) / median(baseline): each sample is resampled
/// with replacement on its own. Deterministic for a `seed` on every standard library.
Interval bootstrap_median_ratio(std::span<const double> now, std::span<const double> baseline,
                                double confidence, std::uint64_t seed, int resamples = 2000);

}  // namespace stats

/// A metric's relative change against its baseline, as the verdict reports it.
struct ChangeEstimate {
  double change_pct = 0;  // positive: the value went up
  double ci_low_pct = 0;  // confidence interval of change_pct
  double ci_high_pct = 0;
  double p_value = 1;  // two-sided, of "no change"
  int n_now = 0;
  int n_base = 0;
  std::string method;  // e.g. "mann-whitney+hodges-lehmann (exact)"
  /// False when the samples cannot reach the confidence at all (too few pairs or
  /// iterations): the interval is the widest available and the change can never
  /// be significant at that level.
  bool reaches_level = true;
  double df = 0;  // the t test's degrees of freedom; 0 for the rank tests (normal)
  /// Run-level tests: where the spread of whole runs came from: "window" (the
  /// baseline runs' own), "pool" (earlier runs of this store) or "prior" (the
  /// stated prior, run_noise.h). "" for the other tests.
  std::string spread = "";
};

/// Change of `now` against an independent `baseline` sample (pooled baseline runs):
/// Hodges-Lehmann shift and interval divided by the baseline median, in percent, with
/// the Mann-Whitney p-value. Throws std::invalid_argument on empty samples, NaNs, a
/// confidence outside (0, 1) or a zero baseline median.
ChangeEstimate estimate_change(std::span<const double> now, std::span<const double> baseline,
                               double confidence);

/// Change of one run's figure `now` against the figures of k >= 2 earlier runs: the
/// t prediction interval of a new run, t = (now - mean) / (s * sqrt(1 + 1/k)) with
/// k - 1 degrees of freedom, on the logarithms when every figure is positive
/// (change_pct = (exp(d) - 1) * 100), else relative to the mean. It catches what a test on
/// iterations cannot: every iteration of a run shares that run's luck (the runner,
/// the neighbours, the page cache). Throws std::invalid_argument on fewer than two
/// runs, NaNs, a confidence outside (0, 1) or a zero mean.
ChangeEstimate estimate_run_change(double now, std::span<const double> baseline_runs,
                                   double confidence);

/// Change in paired mode: now[i] and baseline[i] ran side by side. Works on the
/// log-ratios log(now[i] / baseline[i]), so the estimate is a geometric ratio:
/// change_pct = (exp(HL) - 1) * 100; p-value from the Wilcoxon signed-rank test.
/// Throws std::invalid_argument as estimate_change does, and also on spans of different
/// lengths or values that are not positive (a ratio needs both sides above zero).
ChangeEstimate estimate_paired_change(std::span<const double> now, std::span<const double> baseline,
                                      double confidence);

}  // namespace perfgate
