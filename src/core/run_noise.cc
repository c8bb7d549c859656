#include "perfgate/core/run_noise.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>

namespace perfgate {
namespace {

bool loggable(double v) {
  return std::isfinite(v) && v > 0;
}

// "6" or "7.4": degrees of freedom as a reader takes them.
std::string df_text(double df) {
  char text[32];
  std::snprintf(text, sizeof text, df == std::floor(df) ? "%.0f" : "%.1f", df);
  return text;
}

// The analysis of variance of groups of log figures (two or more each) into
// `noise`: within-group and between-group mean squares, and from them the
// variance of one more run on another day with its degrees of freedom.
void analyse(const std::vector<std::vector<double>>& logs, RunNoise& noise) {
  double n_total = 0, n_squares = 0, sum = 0, ssw = 0;
  std::vector<double> means;
  for (const auto& y : logs) {
    auto n = static_cast<double>(y.size());
    double mean = std::accumulate(y.begin(), y.end(), 0.0) / n;
    for (double v : y) ssw += (v - mean) * (v - mean);
    means.push_back(mean);
    n_total += n;
    n_squares += n * n;
    sum += n * mean;
  }
  auto groups = static_cast<double>(logs.size());
  noise.runs = static_cast<int>(n_total);
  noise.within_df = static_cast<int>(n_total - groups);
  double msw = ssw / noise.within_df;
  noise.within_sd = std::sqrt(msw);
  noise.log_sd = noise.within_sd;
  noise.df = noise.within_df;
  if (logs.size() < 2) return;  // one job: its day's luck is in every run alike
  double grand = sum / n_total, ssb = 0;
  for (size_t g = 0; g < logs.size(); ++g)
    ssb += static_cast<double>(logs[g].size()) * (means[g] - grand) * (means[g] - grand);
  double df_b = groups - 1, msb = ssb / df_b;
  double n0 = (n_total - n_squares / n_total) / df_b;
  if (msb <= msw) return;  // no day part seen: the launches' MSW on its own df
  noise.day_sd = std::sqrt((msb - msw) / n0);
  // V = MSB / n0 + (1 - 1/n0) MSW: Satterthwaite's df for that sum.
  double a = msb / n0, b = (1 - 1 / n0) * msw;
  noise.log_sd = std::sqrt(a + b);
  noise.df = (a + b) * (a + b) / (a * a / df_b + b * b / noise.within_df);
  if (a > b) noise.df = std::min(noise.df, df_b);
}

}  // namespace

RunNoise pooled_run_noise(std::span<const std::vector<double>> groups,
                          std::span<const std::string> days) {
  RunNoise noise;
  std::vector<std::vector<double>> logs;
  std::set<std::string> seen;
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto& group = groups[g];
    if (group.size() < 2 || !std::all_of(group.begin(), group.end(), loggable)) continue;
    auto& y = logs.emplace_back();
    for (double v : group) y.push_back(std::log(v));
    seen.insert(g < days.size() ? days[g] : "\n" + std::to_string(g));  // unlabelled: its own
  }
  noise.groups = static_cast<int>(logs.size());
  noise.days = static_cast<int>(seen.size());
  if (!logs.empty()) analyse(logs, noise);
  return noise;
}

namespace {

// The spread a run-level test uses, and how it came by it.
struct Spread {
  double sd = 0;
  double df = 0;
  std::string how;
};

// The pool as a prior for the window's own spread: their variances combined by
// degrees of freedom, s^2 = (df_p s_p^2 + (k - 1) s_w^2) / (df_p + k - 1). Where
// the window scatters significantly more than the pool says this code does (F
// test, upper tail, p < 0.05: the noise varies by day, or has grown since the
// pool's runs), the pool would err narrow; the window's own spread decides.
Spread window_and_pool(std::span<const double> runs, double mean, const RunNoise& noise) {
  std::string pooled = "noise pooled over " + std::to_string(noise.runs) + " runs of " +
                       std::to_string(noise.days) + (noise.days == 1 ? " day, " : " days, ") +
                       df_text(noise.df) + " df";
  double pool_var = noise.log_sd * noise.log_sd;
  if (runs.size() < 2) return {noise.log_sd, noise.df, pooled};
  double own_df = static_cast<double>(runs.size()) - 1, ss = 0;
  for (double v : runs) ss += (std::log(v) - mean) * (std::log(v) - mean);
  double own_var = ss / own_df;
  double p = pool_var > 0 ? stats::f_distribution_sf(own_var / pool_var, own_df, noise.df)
                          : (own_var > 0 ? 0.0 : 1.0);
  if (p < 0.05) {
    char text[96];
    std::snprintf(text, sizeof text,
                  "the window's own spread: the pool's %s df is narrower (F p=%.3f)",
                  df_text(noise.df).c_str(), p);
    return {std::sqrt(own_var), own_df, text};
  }
  double df = noise.df + own_df;
  return {std::sqrt((noise.df * pool_var + own_df * own_var) / df), df,
          pooled + ", with the window's " + std::to_string(static_cast<int>(own_df)) + " df"};
}

}  // namespace

ChangeEstimate estimate_run_change(double now, std::span<const double> baseline_runs,
                                   double confidence, const RunNoise& noise) {
  const std::string name = "estimate_run_change (pooled noise)";
  if (baseline_runs.empty()) throw std::invalid_argument(name + ": needs a baseline run");
  if (!(confidence > 0 && confidence < 1))
    throw std::invalid_argument(name + ": confidence must be in (0, 1)");
  if (noise.df < 1 || !std::isfinite(noise.log_sd) || noise.log_sd < 0)
    throw std::invalid_argument(name + ": needs a noise estimate with at least 1 df");
  if (!loggable(now) || !std::all_of(baseline_runs.begin(), baseline_runs.end(), loggable))
    throw std::invalid_argument(name + ": figures must be positive and finite");
  auto k = static_cast<double>(baseline_runs.size());
  double mean = 0;
  for (double v : baseline_runs) mean += std::log(v) / k;
  auto spread = window_and_pool(baseline_runs, mean, noise);
  double df = spread.df;
  double scale = spread.sd * std::sqrt(1 + 1 / k);
  double half = stats::student_t_quantile(0.5 + confidence / 2, df) * scale;
  double d = std::log(now) - mean;
  double p = 1;
  if (scale > 0)
    p = 2 * (1 - stats::student_t_cdf(std::fabs(d) / scale, df));
  else if (d != 0)
    p = 0;  // runs of the same code that never varied: any difference is beyond them
  auto pct = [](double diff) { return std::expm1(diff) * 100; };
  return {pct(d),
          pct(d - half),
          pct(d + half),
          p,
          1,
          static_cast<int>(k),
          "run-level t (" + std::to_string(baseline_runs.size()) + " runs, " + spread.how + ")",
          true,
          df};
}

}  // namespace perfgate
