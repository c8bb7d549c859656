#include "perfgate/core/error_rate.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "perfgate/core/statistics.h"

namespace perfgate {

double error_dispersion(std::span<const WindowCounts> windows) {
  double attempts = 0, failures = 0;
  int k = 0;
  for (const auto& w : windows) {
    if (w.attempts == 0) continue;
    attempts += static_cast<double>(w.attempts);
    failures += static_cast<double>(w.failures);
    ++k;
  }
  if (k < 2 || failures <= 0 || failures >= attempts) return 1;
  double rate = failures / attempts;
  double chi_square = 0;
  for (const auto& w : windows) {
    if (w.attempts == 0) continue;
    double expected = static_cast<double>(w.attempts) * rate;
    double residual = static_cast<double>(w.failures) - expected;
    chi_square += residual * residual / (expected * (1 - rate));
  }
  return std::max(1.0, chi_square / (k - 1));
}

double wilson_cc_lower_bound(double events, double trials, double z) {
  if (!(trials > 0) || !(events >= 0) || events > trials || !(z > 0))
    throw std::invalid_argument(
        "wilson_cc_lower_bound: needs 0 <= events <= trials, trials > 0 and z > 0");
  if (events == 0) return 0;
  double n = trials, p = events / trials, z2 = z * z;
  double root = std::sqrt(std::max(0.0, z2 - 2 - 1 / n + 4 * p * (n * (1 - p) + 1)));
  return std::clamp((2 * n * p + z2 - 1 - z * root) / (2 * (n + z2)), 0.0, p);
}

namespace {

// The windows' counts with only `which` failures counted as failures.
std::vector<WindowCounts> counted(std::span<const WindowCounts> windows, Failures which) {
  std::vector<WindowCounts> out(windows.begin(), windows.end());
  if (which == Failures::kAnsweredStatus)
    for (auto& w : out) w.failures = w.status_failures;
  return out;
}

}  // namespace

ErrorRateBound error_rate_bound(const RunFigures& run, double confidence, Failures which) {
  if (run.attempts == 0) throw std::invalid_argument("error_rate_bound: no attempts");
  ErrorRateBound b;
  double attempts = static_cast<double>(run.attempts);
  double failures =
      static_cast<double>(which == Failures::kAll ? run.failures : run.statuses.failed());
  b.rate_pct = 100 * failures / attempts;
  auto windows = counted(run.error_windows, which);
  b.windows = static_cast<int>(std::count_if(windows.begin(), windows.end(),
                                             [](const WindowCounts& w) { return w.attempts > 0; }));
  if (b.windows < 2) {
    b.lower_pct = 100 * stats::wilson_lower_bound(failures, attempts, confidence);
    return b;
  }
  b.dispersion = error_dispersion(windows);
  double z = stats::student_t_quantile(confidence, b.windows - 1);
  b.lower_pct = 100 * wilson_cc_lower_bound(failures / b.dispersion, attempts / b.dispersion, z);
  return b;
}

}  // namespace perfgate
