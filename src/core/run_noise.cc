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

std::string df_text(double df) {
  char text[32];
  std::snprintf(text, sizeof text, df == std::floor(df) ? "%.0f" : "%.1f", df);
  return text;
}

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
  std::string from;  // "window", "pool" or "prior" (ChangeEstimate::spread)
};

std::string noise_text(const RunNoise& noise) {
  char sd[32];
  std::snprintf(sd, sizeof sd, "%.1f %%", noise.log_sd * 100);
  if (noise.prior)
    return std::string("the stated prior of 2-core runners, ") + sd + " a run, " +
           df_text(noise.df) + " df";
  return "noise pooled over " + std::to_string(noise.runs) + " runs of " +
         std::to_string(noise.days) + (noise.days == 1 ? " day, " : " days, ") + df_text(noise.df) +
         " df";
}

std::string source(const RunNoise& noise) {
  return noise.prior ? "prior" : "pool";
}

std::string which(const RunNoise& noise) {
  return noise.prior ? "the prior's" : "the pool's";
}

// The pool (or the prior) as a prior for the window's own spread: their
// variances combined by degrees of freedom, s^2 = (df_p s_p^2 + (k - 1) s_w^2)
// / (df_p + k - 1). Where the window scatters significantly more than a
// candidate says (F test, upper tail, p < 0.05: the noise varies by day, or has
// grown since the pool's runs), it would err narrow: the next one is tried (the
// prior after the pool), and only when every one is narrower does the window's
// own spread decide on its k - 1 df (a window of two never falls back to one df
// while a wider spread on more df is at hand; issue 46).
Spread choose_spread(std::span<const double> runs, std::span<const RunNoise> noises) {
  if (runs.size() < 2)
    return {noises.front().log_sd, noises.front().df, noise_text(noises.front()),
            source(noises.front())};
  double own_df = static_cast<double>(runs.size()) - 1, mean = 0, ss = 0;
  for (double v : runs) mean += std::log(v) / static_cast<double>(runs.size());
  for (double v : runs) ss += (std::log(v) - mean) * (std::log(v) - mean);
  // Runs alike to a part in a million are alike: their rounding is no spread an
  // F test should hold against a pool that never varied.
  double own_var = ss / own_df < 1e-12 ? 0 : ss / own_df;
  if (noises.empty()) return {std::sqrt(own_var), own_df, "", "window"};
  double p = 1;
  for (const auto& noise : noises) {
    double var = noise.log_sd * noise.log_sd;
    p = var > 0 ? stats::f_distribution_sf(own_var / var, own_df, noise.df)
                : (own_var > 0 ? 0.0 : 1.0);
    if (p < 0.05) continue;
    double df = noise.df + own_df;
    return {std::sqrt((noise.df * var + own_df * own_var) / df), df,
            noise_text(noise) + ", with the window's " + std::to_string(static_cast<int>(own_df)) +
                " df",
            source(noise)};
  }
  char text[128];
  std::snprintf(text, sizeof text, "the window's own spread: %s %s df is narrower (F p=%.3f)",
                which(noises.back()).c_str(), df_text(noises.back().df).c_str(), p);
  return {std::sqrt(own_var), own_df, text, "window"};
}

// A prior per metric: {SD of log figures of one run on another day, its df}.
// Where each comes from: docs/statistics.md, "The stated prior".
struct Prior {
  std::string_view metric;
  double log_sd;
  double df;
};

constexpr Prior kPriors[] = {
    {"throughput_rps", 0.08, 12},
    {"latency_p50_ms", 0.10, 12},
    {"latency_p75_ms", 0.10, 12},
    {"latency_p90_ms", 0.10, 12},
    {"latency_p99_ms", 0.12, 12},
    {"latency_p999_ms", 0.25, 12},
    {"latency_max_ms", 0.40, 12},
    {"service_cpu_us_per_request", 0.12, 12},
    {"requests_per_service_cpu_s", 0.12, 12},
};

}  // namespace

std::optional<RunNoise> run_noise_prior(std::string_view metric) {
  for (const auto& p : kPriors) {
    if (p.metric != metric) continue;
    RunNoise noise;
    noise.log_sd = p.log_sd;
    noise.df = p.df;
    noise.prior = true;
    return noise;
  }
  return std::nullopt;
}

ChangeEstimate estimate_run_change(double now, std::span<const double> baseline_runs,
                                   double confidence, const RunNoise& noise) {
  return estimate_run_change(now, baseline_runs, confidence, std::span(&noise, 1), 0);
}

ChangeEstimate estimate_run_change(double now, std::span<const double> baseline_runs,
                                   double confidence, std::span<const RunNoise> noises, int days,
                                   std::span<const double> spread_runs) {
  const std::string name = "estimate_run_change (pooled noise)";
  if (baseline_runs.empty()) throw std::invalid_argument(name + ": needs a baseline run");
  if (!(confidence > 0 && confidence < 1))
    throw std::invalid_argument(name + ": confidence must be in (0, 1)");
  if (noises.empty() && baseline_runs.size() + spread_runs.size() < 2)
    throw std::invalid_argument(name + ": needs a noise estimate or two runs");
  for (const auto& noise : noises)
    if (noise.df < 1 || !std::isfinite(noise.log_sd) || noise.log_sd < 0)
      throw std::invalid_argument(name + ": needs a noise estimate with at least 1 df");
  if (!loggable(now) || !std::all_of(baseline_runs.begin(), baseline_runs.end(), loggable) ||
      !std::all_of(spread_runs.begin(), spread_runs.end(), loggable))
    throw std::invalid_argument(name + ": figures must be positive and finite");
  auto k = static_cast<double>(baseline_runs.size());
  double mean = 0;
  for (double v : baseline_runs) mean += std::log(v) / k;
  std::vector<double> scattered(baseline_runs.begin(), baseline_runs.end());
  scattered.insert(scattered.end(), spread_runs.begin(), spread_runs.end());
  auto spread = choose_spread(scattered, noises);
  double df = spread.df;
  double apart = days > 0 && days < k ? days : k;  // independent draws of a day's luck
  double scale = spread.sd * std::sqrt(1 + 1 / apart);
  double half = stats::student_t_quantile(0.5 + confidence / 2, df) * scale;
  double d = std::log(now) - mean;
  double p = 1;
  if (scale > 0)
    p = 2 * (1 - stats::student_t_cdf(std::fabs(d) / scale, df));
  else if (d != 0)
    p = 0;  // runs of the same code that never varied: any difference is beyond them
  auto pct = [](double diff) { return std::expm1(diff) * 100; };
  std::string runs = std::to_string(baseline_runs.size()) + " runs";
  if (apart < k)
    runs += " of " + std::to_string(static_cast<int>(apart)) + (apart == 1 ? " day" : " days");
  if (!spread_runs.empty())
    runs += ", " + std::to_string(spread_runs.size()) + " more in the spread";
  if (!spread.how.empty()) runs += ", " + spread.how;
  return {pct(d),
          pct(d - half),
          pct(d + half),
          p,
          1,
          static_cast<int>(k),
          "run-level t (" + runs + ")",
          true,
          df,
          spread.from};
}

}  // namespace perfgate
