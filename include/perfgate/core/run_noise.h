#pragma once

// Run-to-run noise pooled over earlier runs: a young baseline of two or three
// runs says little about how far whole runs scatter, but every earlier group of
// runs of the same code on the same host says the same thing about it. See
// docs/statistics.md, "A young store".

#include <span>
#include <vector>

#include "perfgate/core/statistics.h"

namespace perfgate {

/// The spread of whole runs' figures, on their logarithms (about the coefficient
/// of variation), with the degrees of freedom it rests on.
struct RunNoise {
  double log_sd = 0;  // pooled standard deviation of log figures
  int df = 0;         // sum over the groups of (runs - 1)
  int runs = 0;       // runs in groups of two or more
  int groups = 0;     // such groups
};

/// Pooled standard deviation of `groups` of positive run figures, each group runs
/// of the same code (one commit): s^2 = sum_g sum_i (log x_gi - mean_g)^2 / sum_g (n_g - 1),
/// the one-way analysis of variance's within-group mean square. A group of one run
/// adds nothing; a group holding a value <= 0 or not finite is left out (no log).
RunNoise pooled_run_noise(std::span<const std::vector<double>> groups);

/// estimate_run_change() with the spread taken from `noise` instead of from the
/// baseline runs themselves: t = (log now - mean log runs) / (s_p * sqrt(1 + 1/k))
/// with noise.df degrees of freedom, k = the baseline runs (one or more). Needs
/// positive figures and noise.df >= 1; throws std::invalid_argument otherwise.
ChangeEstimate estimate_run_change(double now, std::span<const double> baseline_runs,
                                   double confidence, const RunNoise& noise);

}  // namespace perfgate
