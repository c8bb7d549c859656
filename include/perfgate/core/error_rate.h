#pragma once

// How sure a run's share of failed requests is past an error-rate max.
// Errors come in bursts (a reset fails every request in flight on its
// connection), so requests are no independent trials: the windows' counts say
// how much more the share scatters than a binomial one (docs/statistics.md,
// "The error rate's bound").

#include <span>

#include "perfgate/core/metrics.h"

namespace perfgate {

/// The overdispersion of failures among windows (quasi-binomial): Pearson's
/// chi-square of each window's failures about the pooled rate, over k - 1 for
/// the k windows with attempts, never below 1. 1 when it cannot be told: fewer
/// than two windows, no failures, or nothing but failures.
double error_dispersion(std::span<const WindowCounts> windows);

/// One-sided lower bound of a proportion: Wilson's score interval with
/// continuity correction (Newcombe 1998, method 4) at the quantile `z` (a
/// normal's or Student's t's). Counts need not be whole: effective counts are
/// counts over a dispersion. 0 for no events; throws std::invalid_argument
/// unless 0 <= events <= trials, trials > 0 and z > 0.
double wilson_cc_lower_bound(double events, double trials, double z);

/// An error rate and how sure it is.
struct ErrorRateBound {
  double rate_pct = 0;    // failures over attempts
  double lower_pct = 0;   // the one-sided lower bound
  double dispersion = 1;  // the windows' overdispersion; 1 with no evidence of bursts
  int windows = 0;        // windows with attempts: what the dispersion rests on
};

/// Which failures a bound counts: every failed request, or only the responses
/// whose status is not a success: answers the service itself gave, which a
/// saturated load machine cannot cause (it can cause timeouts and resets).
enum class Failures { kAll, kAnsweredStatus };

/// The bound of `run`'s failed share at one-sided `confidence` in (0, 1). With
/// two or more windows: the effective counts failures / phi among attempts /
/// phi (phi = error_dispersion) at Student's t quantile with k - 1 degrees of
/// freedom (phi is itself estimated from k windows), with the continuity
/// correction (a few bursts are a few events). With fewer windows, or none
/// known, no dispersion can be seen: Wilson's bound over every request as for
/// independent ones (stats::wilson_lower_bound). Needs run.attempts > 0.
/// `which` kAnsweredStatus: the same bound of the failed statuses alone, with
/// their own dispersion (WindowCounts::status_failures).
ErrorRateBound error_rate_bound(const RunFigures& run, double confidence,
                                Failures which = Failures::kAll);

}  // namespace perfgate
