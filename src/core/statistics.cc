#include "perfgate/core/statistics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>
#include <random>
#include <stdexcept>

namespace perfgate {
namespace stats {
namespace {

// Below this sample size the exact null distributions are used, as R's wilcox.test does:
// counting them stays cheap (about 50 ms at 49 x 49), and tiny samples are where the
// normal approximation is worst.
constexpr size_t kExactLimit = 50;

void require_values(std::span<const double> values, const char* what) {
  if (values.empty())
    throw std::invalid_argument(std::string(what) + ": needs at least one value, got none");
  for (double v : values)
    if (!std::isfinite(v))
      throw std::invalid_argument(std::string(what) + ": values must be finite numbers");
}

void require_confidence(double confidence) {
  if (!(confidence > 0 && confidence < 1))
    throw std::invalid_argument("confidence must be between 0 and 1 exclusive, got " +
                                std::to_string(confidence));
}

std::vector<double> sorted(std::span<const double> values) {
  std::vector<double> out(values.begin(), values.end());
  std::sort(out.begin(), out.end());
  return out;
}

double median_of_sorted(const std::vector<double>& s) {
  size_t mid = s.size() / 2;
  return s.size() % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2.0;
}

// The sum of t^3 - t over groups of t tied values: ties shrink a rank sum's variance.
double tie_term(std::span<const double> values) {
  auto s = sorted(values);
  double term = 0;
  for (size_t i = 0, j = 0; i < s.size(); i = j) {
    while (j < s.size() && s[j] == s[i]) ++j;
    double t = static_cast<double>(j - i);
    term += t * t * t - t;
  }
  return term;
}

bool has_ties(std::span<const double> values) {
  return tie_term(values) > 0;
}

std::vector<double> concat(std::span<const double> x, std::span<const double> y) {
  std::vector<double> all(x.begin(), x.end());
  all.insert(all.end(), y.begin(), y.end());
  return all;
}

// Two-sided p of a rank statistic from the normal approximation. The 0.5 continuity
// correction moves the statistic toward its mean, as R and SciPy do.
double normal_two_sided_p(double centred, double sigma) {
  if (sigma <= 0) return 1.0;  // every value tied: nothing tells the samples apart
  double sign = (centred > 0) - (centred < 0);
  double z = (centred - 0.5 * sign) / sigma;
  return std::min(1.0, std::erfc(std::fabs(z) / std::sqrt(2.0)));
}

// counts[u] = how many of the C(m + n, m) rank arrangements give U = u. Counted as the
// m-subsets of ranks 1..m+n by their sum, only ever adding, so no precision is lost
// to cancellation.
std::vector<double> mann_whitney_counts(size_t m, size_t n) {
  if (m > n) std::swap(m, n);  // U has the same distribution either way; fewer rows
  size_t total = m + n, max_sum = m * (2 * total - m + 1) / 2;
  std::vector<std::vector<double>> ways(m + 1, std::vector<double>(max_sum + 1, 0.0));
  ways[0][0] = 1;
  for (size_t rank = 1; rank <= total; ++rank)
    for (size_t k = std::min(rank, m); k >= 1; --k)
      for (size_t s = max_sum; s >= rank; --s) ways[k][s] += ways[k - 1][s - rank];
  size_t offset = m * (m + 1) / 2;
  return {ways[m].begin() + offset, ways[m].begin() + offset + m * n + 1};
}

// counts[v] = how many of the 2^n sign patterns give the signed-rank sum V = v.
std::vector<double> signed_rank_counts(size_t n) {
  size_t max_sum = n * (n + 1) / 2;
  std::vector<double> ways(max_sum + 1, 0.0);
  ways[0] = 1;
  for (size_t rank = 1; rank <= n; ++rank)
    for (size_t s = max_sum; s >= rank; --s) ways[s] += ways[s - rank];
  return ways;
}

// Two-sided exact p: twice the smaller tail at the observed integer statistic.
double exact_two_sided_p(const std::vector<double>& counts, double statistic) {
  auto at = static_cast<size_t>(std::llround(statistic));
  double total = std::accumulate(counts.begin(), counts.end(), 0.0);
  double lower = std::accumulate(counts.begin(), counts.begin() + at + 1, 0.0);
  double upper = std::accumulate(counts.begin() + at, counts.end(), 0.0);
  return std::min(1.0, 2.0 * std::min(lower, upper) / total);
}

// The smallest statistic q with P(S <= q) >= alpha / 2 (R's qwilcox / qsignrank).
// 0 when even the most extreme arrangement is that likely: the samples are too
// small to reach the level at all (interval_at then says so).
size_t exact_critical(const std::vector<double>& counts, double alpha) {
  double total = std::accumulate(counts.begin(), counts.end(), 0.0);
  double target = alpha / 2 - 10 * std::numeric_limits<double>::epsilon();  // R's fuzz
  double cum = 0;
  size_t q = 0;
  for (; q + 1 < counts.size(); ++q) {
    cum += counts[q] / total;
    if (cum >= target) break;
  }
  return q;
}

// The same critical value from the continuity-corrected normal approximation of a
// statistic with mean mean and deviation sigma.
size_t normal_critical(double mean, double sigma, double alpha) {
  double q = std::ceil(mean - normal_quantile(1 - alpha / 2) * sigma - 0.5);
  return static_cast<size_t>(std::max(q, 0.0));
}

// The interval between the q-th smallest and the q-th largest of the sorted pairwise
// values: the shifts the rank test at level alpha would not reject. A critical
// value of 0 cannot reach the level: the widest interval there is (R's
// wilcox.test does the same, with a warning) claims less than asked, and says so.
// The estimate and bounds are four order statistics of the n or n^2
// averages: each found by nth_element right of the last (linear), not by a
// sort (n^2 log n for the Walsh averages: a third of a simulated gate's time).
Interval interval_at(std::vector<double> pairwise, size_t q) {
  bool reaches = q >= 1;
  size_t n = pairwise.size();
  q = std::clamp<size_t>(q, 1, (n + 1) / 2);  // low <= high on tiny samples
  // Ascending, as q <= (n + 1) / 2; each search right of the last one found,
  // which a search over it could move.
  size_t placed = 0;
  for (size_t k : {q - 1, (n - 1) / 2, n / 2, n - q}) {
    if (k < placed) continue;
    auto at = [&](size_t i) { return pairwise.begin() + static_cast<std::ptrdiff_t>(i); };
    std::nth_element(at(placed), at(k), pairwise.end());
    placed = k + 1;
  }
  // + 0.0: of tied zeros a search may pick -0, which a report would print.
  double median = (pairwise[(n - 1) / 2] + pairwise[n / 2]) / 2.0 + 0.0;
  return {median, pairwise[q - 1], pairwise[n - q], reaches};
}

std::vector<double> pairwise_differences(std::span<const double> x, std::span<const double> y) {
  std::vector<double> d;
  d.reserve(x.size() * y.size());
  for (double a : x)
    for (double b : y) d.push_back(a - b);
  return d;
}

std::vector<double> walsh_averages(std::span<const double> d) {
  std::vector<double> w;
  w.reserve(d.size() * (d.size() + 1) / 2);
  for (size_t i = 0; i < d.size(); ++i)
    for (size_t j = i; j < d.size(); ++j) w.push_back((d[i] + d[j]) / 2.0);
  return w;
}

bool mann_whitney_exact(std::span<const double> x, std::span<const double> y) {
  return x.size() < kExactLimit && y.size() < kExactLimit && !has_ties(concat(x, y));
}

double mann_whitney_sigma(std::span<const double> x, std::span<const double> y) {
  double m = x.size(), n = y.size(), total = m + n;
  double ties = total > 1 ? tie_term(concat(x, y)) / (total * (total - 1)) : 0.0;
  return std::sqrt(m * n / 12.0 * ((total + 1) - ties));
}

std::vector<double> absolute_values(std::span<const double> values) {
  std::vector<double> out;
  for (double v : values) out.push_back(std::fabs(v));
  return out;
}

double signed_rank_sigma(std::span<const double> nonzero) {
  double n = nonzero.size();
  return std::sqrt(n * (n + 1) * (2 * n + 1) / 24.0 - tie_term(absolute_values(nonzero)) / 48.0);
}

bool signed_rank_exact(std::span<const double> differences) {
  bool zeros = std::find(differences.begin(), differences.end(), 0.0) != differences.end();
  return differences.size() < kExactLimit && !zeros && !has_ties(absolute_values(differences));
}

// Rejection sampling keeps every index equally likely; unlike
// std::uniform_int_distribution it draws the same indices on every standard library.
size_t draw_index(std::mt19937_64& rng, size_t n) {
  const std::uint64_t bound = n;
  const std::uint64_t threshold = (0 - bound) % bound;  // 2^64 mod n
  for (;;) {
    std::uint64_t r = rng();
    if (r >= threshold) return static_cast<size_t>(r % bound);
  }
}

double resampled_median(std::span<const double> values, std::mt19937_64& rng,
                        std::vector<double>& scratch) {
  scratch.resize(values.size());
  for (double& v : scratch) v = values[draw_index(rng, values.size())];
  std::sort(scratch.begin(), scratch.end());
  return median_of_sorted(scratch);
}

}  // namespace

double median(std::span<const double> values) {
  require_values(values, "median");
  return median_of_sorted(sorted(values));
}

double quantile(std::span<const double> values, double p) {
  require_values(values, "quantile");
  if (!(p >= 0 && p <= 1))
    throw std::invalid_argument("quantile: p must be in [0, 1], got " + std::to_string(p));
  auto s = sorted(values);
  double h = (s.size() - 1) * p;
  auto lo = static_cast<size_t>(std::floor(h));
  if (lo + 1 >= s.size()) return s.back();
  return s[lo] + (h - lo) * (s[lo + 1] - s[lo]);
}

double mad(std::span<const double> values, double scale) {
  double centre = median(values);
  std::vector<double> deviations;
  for (double v : values) deviations.push_back(std::fabs(v - centre));
  return scale * median(deviations);
}

std::vector<double> ranks(std::span<const double> values) {
  if (!values.empty()) require_values(values, "ranks");  // a NaN would break the sort
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> out(values.size());
  for (size_t i = 0, j = 0; i < order.size(); i = j) {
    while (j < order.size() && values[order[j]] == values[order[i]]) ++j;
    double average = (i + 1 + j) / 2.0;  // mean of the 1-based ranks i+1 .. j
    for (size_t k = i; k < j; ++k) out[order[k]] = average;
  }
  return out;
}

double normal_cdf(double z) {
  return 0.5 * std::erfc(-z / std::sqrt(2.0));
}

// Acklam's rational approximation (relative error 1.2e-9), then one Halley step on
// erfc that brings it to full double precision.
double normal_quantile(double p) {
  if (!(p > 0 && p < 1))
    throw std::invalid_argument("normal_quantile: p must be in (0, 1), got " + std::to_string(p));
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                 -2.759285104469687e+02, 1.383577518672690e+02,
                                 -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                 -1.556989798598866e+02, 6.680131188771972e+01,
                                 -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                 -2.400758277161838e+00, -2.549732539343734e+00,
                                 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                                 2.445134137142996e+00, 3.754408661907416e+00};
  double x;
  if (p < 0.02425 || p > 1 - 0.02425) {
    double q = std::sqrt(-2 * std::log(std::min(p, 1 - p)));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    if (p > 0.5) x = -x;
  } else {
    double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  }
  double e = normal_cdf(x) - p;
  double u = e * std::sqrt(2 * std::numbers::pi) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

namespace {

// Continued fraction of the regularized incomplete beta function (modified Lentz),
// as in Numerical Recipes' betacf; converges fast for x < (a + 1) / (a + b + 2).
double beta_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  d = 1 / (std::fabs(d) < kTiny ? kTiny : d);
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    for (int odd = 0; odd < 2; ++odd) {
      double num = odd ? -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
                       : m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
      d = 1 + num * d;
      d = 1 / (std::fabs(d) < kTiny ? kTiny : d);
      c = 1 + num / c;
      if (std::fabs(c) < kTiny) c = kTiny;
      h *= d * c;
      if (odd && std::fabs(d * c - 1) < 1e-15) return h;
    }
  }
  return h;
}

double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) +
                          b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_fraction(a, b, x) / a;
  return 1 - front * beta_fraction(b, a, 1 - x) / b;
}

}  // namespace

double f_distribution_sf(double f, double d1, double d2) {
  if (!(d1 > 0 && d2 > 0)) throw std::invalid_argument("f_distribution_sf: df must be > 0");
  if (!(f > 0)) return 1;
  if (std::isinf(f)) return 0;
  return incomplete_beta(d2 / 2, d1 / 2, d2 / (d2 + d1 * f));
}

double student_t_cdf(double t, double df) {
  if (!(df > 0)) throw std::invalid_argument("student_t_cdf: df must be > 0");
  if (std::isinf(t)) return t > 0 ? 1 : 0;
  double tail = 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t));
  return t > 0 ? 1 - tail : tail;
}

double student_t_quantile(double p, double df) {
  if (!(p > 0 && p < 1)) throw std::invalid_argument("student_t_quantile: p must be in (0, 1)");
  // Newton's steps on the distribution function from the normal quantile's
  // Cornish-Fisher start, kept inside a bracket that holds the answer, and
  // halving it where a step would leave it: four or five evaluations of the
  // incomplete beta instead of bisection's fifty. (Every gate's look and the
  // simulations draw thousands of these.)
  double lo = -1, hi = 1;
  while (student_t_cdf(lo, df) > p) lo *= 2;
  while (student_t_cdf(hi, df) < p) hi *= 2;
  double z = normal_quantile(p), z2 = z * z;
  double x = z + z * (z2 + 1) / (4 * df) + z * ((5 * z2 + 16) * z2 + 3) / (96 * df * df);
  if (!(x > lo && x < hi)) x = (lo + hi) / 2;
  double log_norm =
      std::lgamma((df + 1) / 2) - std::lgamma(df / 2) - 0.5 * std::log(df * std::numbers::pi);
  for (int i = 0; i < 200; ++i) {
    double f = student_t_cdf(x, df) - p;
    if (f == 0) return x;
    (f < 0 ? lo : hi) = x;
    double density = std::exp(log_norm - (df + 1) / 2 * std::log1p(x * x / df));
    double next = x - f / density;
    if (!(next > lo && next < hi)) next = (lo + hi) / 2;
    if (std::fabs(next - x) <= 1e-14 * std::max(1.0, std::fabs(x)) ||
        hi - lo <= 1e-14 * std::max(1.0, std::fabs(lo)))
      return next;
    x = next;
  }
  return x;
}

TestResult mann_whitney(std::span<const double> x, std::span<const double> y) {
  require_values(x, "mann_whitney: first sample");
  require_values(y, "mann_whitney: second sample");
  auto r = ranks(concat(x, y));
  double m = x.size(), n = y.size();
  double u = std::accumulate(r.begin(), r.begin() + x.size(), 0.0) - m * (m + 1) / 2;
  if (mann_whitney_exact(x, y))
    return {u, exact_two_sided_p(mann_whitney_counts(x.size(), y.size()), u), true};
  return {u, normal_two_sided_p(u - m * n / 2, mann_whitney_sigma(x, y)), false};
}

// Zeros by Pratt's method (SciPy's zero_method='pratt', Cureton's normal
// approximation): ranked with the rest, but voting for neither side. The
// Hodges-Lehmann interval reported beside the p-value keeps zeros among its
// Walsh averages; dropping them from the test alone (Wilcoxon's method) let the
// two disagree on what an unchanged pair says (issue 39, finding 11).
TestResult wilcoxon_signed_rank(std::span<const double> differences) {
  require_values(differences, "wilcoxon_signed_rank");
  auto r = ranks(absolute_values(differences));
  std::vector<double> nonzero;
  double v = 0;
  for (size_t i = 0; i < differences.size(); ++i) {
    if (differences[i] > 0) v += r[i];
    if (differences[i] != 0) nonzero.push_back(differences[i]);
  }
  if (nonzero.empty()) return {0, 1, false};  // every pair equal: no evidence of a change
  if (signed_rank_exact(differences))
    return {v, exact_two_sided_p(signed_rank_counts(nonzero.size()), v), true};
  double n = differences.size(), zeros = n - nonzero.size();
  double mean = (n * (n + 1) - zeros * (zeros + 1)) / 4;
  double variance = (n * (n + 1) * (2 * n + 1) - zeros * (zeros + 1) * (2 * zeros + 1)) / 24 -
                    tie_term(absolute_values(nonzero)) / 48;
  return {v, normal_two_sided_p(v - mean, std::sqrt(std::max(variance, 0.0))), false};
}

Interval hodges_lehmann(std::span<const double> x, std::span<const double> y, double confidence) {
  require_values(x, "hodges_lehmann: first sample");
  require_values(y, "hodges_lehmann: second sample");
  require_confidence(confidence);
  double alpha = 1 - confidence;
  bool exact = mann_whitney_exact(x, y);
  size_t q = exact ? exact_critical(mann_whitney_counts(x.size(), y.size()), alpha)
                   : normal_critical(x.size() * y.size() / 2.0, mann_whitney_sigma(x, y), alpha);
  // With ties the normal approximation can miss that small samples reach the
  // level: the exact bound, 2 / C(m + n, m), says whether they can.
  double log_arrangements = std::lgamma(x.size() + y.size() + 1.0) - std::lgamma(x.size() + 1.0) -
                            std::lgamma(y.size() + 1.0);
  if (!exact && q == 0 && std::log(2.0) - log_arrangements < std::log(alpha)) q = 1;
  return interval_at(pairwise_differences(x, y), q);
}

Interval hodges_lehmann_paired(std::span<const double> differences, double confidence) {
  require_values(differences, "hodges_lehmann_paired");
  require_confidence(confidence);
  double alpha = 1 - confidence, n = differences.size();
  // Zeros stay in: a pair that did not change is evidence of no change.
  bool exact = signed_rank_exact(differences);
  size_t q = exact ? exact_critical(signed_rank_counts(differences.size()), alpha)
                   : normal_critical(n * (n + 1) / 4, signed_rank_sigma(differences), alpha);
  // With ties or zeros the normal approximation can miss that n pairs reach the
  // level: n' nonzero pairs all one way give the exact p = 2 / 2^n'.
  auto nonzero =
      std::count_if(differences.begin(), differences.end(), [](double d) { return d != 0; });
  if (!exact && q == 0 && std::ldexp(2.0, -static_cast<int>(nonzero)) < alpha) q = 1;
  return interval_at(walsh_averages(differences), q);
}

double power_multiplier(double confidence, double power, double df) {
  require_confidence(confidence);
  require_confidence(power);
  auto q = [&](double p) { return df > 0 ? student_t_quantile(p, df) : normal_quantile(p); };
  return 1 + q(power) / q(0.5 + confidence / 2);
}

double wilson_lower_bound(double events, double trials, double confidence) {
  require_confidence(confidence);
  if (!(trials > 0) || !(events >= 0) || events > trials)
    throw std::invalid_argument("wilson_lower_bound: needs 0 <= events <= trials and trials > 0");
  if (events == 0) return 0;
  double z = normal_quantile(confidence), p = events / trials, z2n = z * z / trials;
  double centre = p + z2n / 2;
  double spread = z * std::sqrt(p * (1 - p) / trials + z2n / (4 * trials));
  return std::max(0.0, (centre - spread) / (1 + z2n));
}

Interval bootstrap_median_ratio(std::span<const double> now, std::span<const double> baseline,
                                double confidence, std::uint64_t seed, int resamples) {
  require_values(now, "bootstrap_median_ratio: now");
  require_values(baseline, "bootstrap_median_ratio: baseline");
  require_confidence(confidence);
  if (resamples < 1) throw std::invalid_argument("bootstrap_median_ratio: resamples must be >= 1");
  for (double v : baseline)
    if (v <= 0) throw std::invalid_argument("bootstrap_median_ratio: baseline values must be > 0");
  std::mt19937_64 rng(seed);
  std::vector<double> ratios, scratch;
  for (int i = 0; i < resamples; ++i) {
    double top = resampled_median(now, rng, scratch);
    ratios.push_back(top / resampled_median(baseline, rng, scratch));
  }
  double alpha = 1 - confidence;
  return {median(now) / median(baseline), quantile(ratios, alpha / 2),
          quantile(ratios, 1 - alpha / 2)};
}

}  // namespace stats

ChangeEstimate estimate_change(std::span<const double> now, std::span<const double> baseline,
                               double confidence) {
  stats::require_values(now, "estimate_change: now");
  stats::require_values(baseline, "estimate_change: baseline");
  auto shift = stats::hodges_lehmann(now, baseline, confidence);
  auto test = stats::mann_whitney(now, baseline);
  double base = stats::median(baseline);
  if (base == 0)
    throw std::invalid_argument("estimate_change: baseline median is 0, no relative change");
  double pct = 100.0 / std::fabs(base);
  return {shift.estimate * pct,
          shift.low * pct,
          shift.high * pct,
          test.p_value,
          static_cast<int>(now.size()),
          static_cast<int>(baseline.size()),
          std::string("mann-whitney+hodges-lehmann") + (test.exact ? " (exact)" : " (normal)"),
          shift.reaches_level};
}

ChangeEstimate estimate_run_change(double now, std::span<const double> baseline_runs,
                                   double confidence) {
  stats::require_values(baseline_runs, "estimate_run_change: baseline_runs");
  if (std::isnan(now)) throw std::invalid_argument("estimate_run_change: now is NaN");
  if (!(confidence > 0 && confidence < 1))
    throw std::invalid_argument("estimate_run_change: confidence must be in (0, 1)");
  auto k = static_cast<double>(baseline_runs.size());
  if (k < 2) throw std::invalid_argument("estimate_run_change: needs at least 2 baseline runs");
  // Positive figures are compared as log-ratios: run-to-run noise is relative, and
  // the interval of a change can then never reach below -100 %.
  bool logs = now > 0 && std::all_of(baseline_runs.begin(), baseline_runs.end(),
                                     [](double v) { return v > 0; });
  auto scaled = [&](double v) { return logs ? std::log(v) : v; };
  double mean = 0;
  for (double v : baseline_runs) mean += scaled(v) / k;
  if (!logs && mean == 0) throw std::invalid_argument("estimate_run_change: baseline mean is 0");
  double ss = 0;
  for (double v : baseline_runs) ss += (scaled(v) - mean) * (scaled(v) - mean);
  double scale = std::sqrt(ss / (k - 1)) * std::sqrt(1 + 1 / k);
  double half = stats::student_t_quantile(0.5 + confidence / 2, k - 1) * scale;
  double d = scaled(now) - mean;
  double p = 1;
  if (scale > 0)
    p = 2 * (1 - stats::student_t_cdf(std::fabs(d) / scale, k - 1));
  else if (d != 0)
    p = 0;  // runs that never varied: any difference is beyond their noise
  auto pct = [&](double diff) {
    return logs ? std::expm1(diff) * 100 : diff / std::fabs(mean) * 100;
  };
  return {pct(d),
          pct(d - half),
          pct(d + half),
          p,
          1,
          static_cast<int>(k),
          "run-level t (" + std::to_string(baseline_runs.size()) + " runs)",
          true,
          k - 1,
          "window"};
}

ChangeEstimate estimate_paired_change(std::span<const double> now, std::span<const double> baseline,
                                      double confidence) {
  stats::require_values(now, "estimate_paired_change: now");
  stats::require_values(baseline, "estimate_paired_change: baseline");
  if (now.size() != baseline.size())
    throw std::invalid_argument("estimate_paired_change: " + std::to_string(now.size()) +
                                " values now but " + std::to_string(baseline.size()) +
                                " in the baseline; pairs need equal counts");
  std::vector<double> log_ratios;
  for (size_t i = 0; i < now.size(); ++i) {
    if (!(now[i] > 0 && baseline[i] > 0))
      throw std::invalid_argument("estimate_paired_change: pair " + std::to_string(i) +
                                  " has a value <= 0; ratios need positive values");
    log_ratios.push_back(std::log(now[i] / baseline[i]));
  }
  auto shift = stats::hodges_lehmann_paired(log_ratios, confidence);
  auto test = stats::wilcoxon_signed_rank(log_ratios);
  auto pct = [](double log_ratio) { return std::expm1(log_ratio) * 100.0; };
  return {pct(shift.estimate),
          pct(shift.low),
          pct(shift.high),
          test.p_value,
          static_cast<int>(now.size()),
          static_cast<int>(baseline.size()),
          std::string("wilcoxon-signed-rank+hodges-lehmann on log-ratios") +
              (test.exact ? " (exact)" : " (normal)"),
          shift.reaches_level};
}

}  // namespace perfgate
