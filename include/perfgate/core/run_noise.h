#pragma once

// Run-to-run noise pooled over earlier runs: a young baseline of one to four
// runs says little about how far whole runs scatter, but earlier groups of runs
// of the same code on the same host do, provided they come from several days:
// runs of one job (a calibration) share that day's luck. See
// docs/statistics.md, "A young store".

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "perfgate/core/statistics.h"

namespace perfgate {

/// The spread of whole runs' figures, on their logarithms (about the coefficient
/// of variation), with the degrees of freedom it rests on.
struct RunNoise {
  /// SD of log figures of one more run on another day than the pool's groups:
  /// sqrt(within^2 + day^2), what judging a run against runs of other days needs.
  double log_sd = 0;
  double df = 0;         // its degrees of freedom (Satterthwaite's; see pooled_run_noise)
  int runs = 0;          // runs in groups of two or more
  int groups = 0;        // such groups
  int days = 0;          // distinct days among them (each group its own without labels)
  double within_sd = 0;  // spread of runs within a group (one job's launches)
  int within_df = 0;     // sum over the groups of (runs - 1)
  double day_sd = 0;     // spread of groups beyond their runs' (0 when it is not seen)
  /// A stated figure (run_noise_prior()), not this store's runs: runs, groups and
  /// days are 0, and log_sd with df is all it says.
  bool prior = false;
};

/// Degrees of freedom as a reader takes them: "6", or "7.4" for a fraction.
std::string df_text(double df);

/// The stated prior for how far one whole run of `metric` scatters about the
/// level of runs on other days, on 2-core shared CI runners: a conservative SD
/// of log figures with the degrees of freedom it is worth (docs/statistics.md,
/// "A young store", says where each figure comes from). A store without a pool
/// of kPoolMinDays days judges with it, refined by the window's own runs,
/// until the pool or the window can speak for themselves; so a new store
/// decides from its second run. nullopt for a metric without one (the
/// absolute-only and counted metrics).
std::optional<RunNoise> run_noise_prior(std::string_view metric);

/// Days of groups a pool needs before it judges a run: with fewer, the
/// day-to-day part of the noise is barely estimated (1 df or none).
inline constexpr int kPoolMinDays = 3;

/// One-way random-effects analysis of variance of `groups` of positive run
/// figures (on their logarithms), each group the runs of one code in one job:
/// the within-group mean square MSW estimates the launches' variance, the
/// between-group mean square MSB that plus n0 times the day's, n0 = (N - sum
/// n_g^2 / N) / (G - 1). A run on another day varies by V = MSW + max(0, (MSB -
/// MSW) / n0); its degrees of freedom are Satterthwaite's for MSB / n0 + (1 -
/// 1/n0) MSW, but at most G - 1 where the day part is the larger (a chi-square
/// of G - 1 df is more skewed than Satterthwaite's approximation allows for).
/// MSB <= MSW: V = MSW on its sum (n_g - 1) df. One group: the same, the day
/// part unseen (and the pool no judge: see kPoolMinDays). A group of one
/// run adds nothing; a group holding a value <= 0 or not finite is left out.
/// `days` labels each group's day (empty: every group a day of its own).
RunNoise pooled_run_noise(std::span<const std::vector<double>> groups,
                          std::span<const std::string> days = {});

/// estimate_run_change() with the spread taken from `noise` instead of from the
/// baseline runs themselves: t = (log now - mean log runs) / (s_p * sqrt(1 + 1/k))
/// with noise.df degrees of freedom, k = the baseline runs (one or more). Needs
/// positive figures and noise.df >= 1; throws std::invalid_argument otherwise.
ChangeEstimate estimate_run_change(double now, std::span<const double> baseline_runs,
                                   double confidence, const RunNoise& noise);

/// The same with a choice of spreads, in order of preference (the pool, then the
/// prior): the first one that the window's own runs do not scatter significantly
/// past (F test) is combined with the window's own spread by degrees of freedom;
/// when every one is narrower than the window shows, or none is given, the
/// window's own spread decides. The level is the baseline runs' mean; the
/// window's own spread is that of the baseline runs and `spread_runs` together:
/// runs of the window's period that are no baseline (they regressed) yet lie
/// within the warn limit, so that leaving them out of the level does not narrow
/// the spread (issue 46). `days`: the distinct days of the baseline runs
/// (0: one each); runs sharing a day share its luck, so their mean varies by up to
/// V / days, not V / k, and the interval is sqrt(1 + 1 / days) wide (conservative).
ChangeEstimate estimate_run_change(double now, std::span<const double> baseline_runs,
                                   double confidence, std::span<const RunNoise> noises, int days,
                                   std::span<const double> spread_runs = {});

}  // namespace perfgate
