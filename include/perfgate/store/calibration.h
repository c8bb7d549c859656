#pragma once

// `perfgate calibrate`: what A/A runs against an unchanged service say about the
// noise of this profile on this runner, and which limits it can honestly hold.

#include <optional>
#include <string>
#include <vector>

#include "perfgate/core/metrics.h"
#include "perfgate/profile/profile.h"

namespace perfgate {

/// Each run's first kept window against its later ones (issue 39, item 4): a
/// service still warming up after load.warmup makes the first window worse,
/// which a paired run's one window a launch takes as noise, or as a change
/// where the two builds warm differently.
struct WarmupTransient {
  double first_pct = 0;  // the first window's change from the later ones' median, %
  double low_pct = 0;    // its 95 % interval (Student t over the runs' log ratios)
  double high_pct = 0;
  int runs = 0;
  /// The interval is wholly on the metric's worse side and the change at least
  /// kWarmupTransientPct: the warm-up is too short for this service.
  bool found = false;
};

/// The least first-window change (%) calibrate calls a warm-up transient: less
/// is within what a paired run's launch noise holds anyway.
inline constexpr double kWarmupTransientPct = 2.0;

/// One metric's noise over the calibration runs, in % of its typical figure.
struct MetricNoise {
  std::string metric;
  std::string unit;
  double typical = 0;              // median of the runs' figures
  double iteration_noise_pct = 0;  // spread of iterations within a run (median robust CV)
  double run_noise_pct = 0;        // spread of whole runs (SD of log figures, as %)
  double detectable_pct = 0;       // smallest change the profile's window and confidence flag
  double suggested_warn_pct = 0;
  double suggested_fail_pct = 0;
  bool gated = false;              // the profile sets a relative limit on it
  double current_fail_pct = 0;     // that limit (0 when none)
  bool current_too_tight = false;  // the limit is inside the noise: it would cry wolf
  // Variance components of the log figures (one-way random effects, method of
  // moments), each as a standard deviation in %: a window within a launch, a
  // launch within a day, and a day (only from calibrations on 2 or more days).
  double window_sd_pct = 0;
  double launch_sd_pct = 0;
  std::optional<double> day_sd_pct;
  // Kalibera & Jones's cost model for the pull-request path (paired mode): to
  // detect `detect_pct` with 80 % power, `launches` launch pairs of `block`
  // windows each, chosen to take the least time.
  double detect_pct = 0;
  int block = 1;
  int launches = 0;
  double seconds = 0;  // the measuring time that takes, both sides
  /// Empty when a run kept fewer than 3 windows (a first and two to compare).
  std::optional<WarmupTransient> warmup;
};

/// What a launch and a window cost, in seconds: a launch starts the service
/// and warms it up; a window is a measurement window (and its leg warm-up).
struct RunCost {
  double launch_s = 2;
  double window_s = 1;
};

/// Kalibera & Jones (2013): the windows per launch that minimise the time to
/// reach a given precision, sqrt((launch cost / window cost) * window var /
/// launch var), rounded, from 1 to `max_block`; `max_block` when the launches do
/// not differ.
int optimal_block(double window_sd, double launch_sd, const RunCost& cost, int max_block = 20);

/// The limits a paired run's plan decides between, in %: a change of
/// `detect_pct` is failed with 80 % power; 0 plans the verdict's own "count
/// that would decide": the interval at 80 % power fitting between `warn_pct`
/// and `fail_pct`, so that a change at the warn limit passes and one at the
/// fail limit fails, each with 80 % power.
struct PlanLimits {
  double warn_pct = 0;
  double fail_pct = 0;
  double detect_pct = 0;
};

/// Launch pairs of `block` windows a paired run needs to decide as the verdict
/// does (docs/statistics.md, "Inconclusive"), at the two-sided
/// `family_confidence_pct` each tested metric is judged at. A pair's log ratio
/// has variance 2 (launch var + window var / block), the window's share times
/// pi/2 for a block's median; the signed-rank estimate's variance is pi/3 of
/// the mean's. 0 when `detect_pct` is not past the fail limit: a change at the
/// fail limit itself fails at most half the time, by the rule.
int launches_to_detect(double window_sd, double launch_sd, int block, const PlanLimits& limits,
                       double family_confidence_pct);

struct Calibration {
  int runs = 0;
  std::string warmup;  // the profile's load.warmup, for the advice
  int window = 0;      // the profile's baseline.window the figures assume
  double confidence = 0;
  std::vector<MetricNoise> metrics;  // metric_defs() then host_metric_defs() order
  int suggested_repeat_count = 0;    // kept iterations per run for the suggested limits
  RunCost cost;
};

/// What `calibrate` asks beyond the profile: the change to plan for (0: each
/// metric's fail limit, else its suggested one), the costs, and earlier
/// calibrations' figures by UTC day (for the day component; may be empty).
struct CalibrationAsk {
  double detect_pct = 0;
  RunCost cost;
  std::vector<std::vector<RunFigures>> earlier_days;
};

/// Noise and suggestions from the figures of `runs` A/A runs (at least 2) of `profile`.
/// Metrics whose figures are 0 (no errors) have no relative noise and are skipped.
Calibration calibrate(const std::vector<RunFigures>& runs, const Profile& profile,
                      const CalibrationAsk& ask = {});

/// The console table and the advice, for people.
std::string calibration_report(const Calibration& c);

}  // namespace perfgate
