#pragma once

// `perfgate calibrate`: what A/A runs against an unchanged service say about the
// noise of this profile on this runner, and which limits it can honestly hold.

#include <string>
#include <vector>

#include "perfgate/core/metrics.h"
#include "perfgate/profile/profile.h"

namespace perfgate {

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
};

struct Calibration {
  int runs = 0;
  int window = 0;  // the profile's baseline.window the figures assume
  double confidence = 0;
  std::vector<MetricNoise> metrics;  // metric_defs() then host_metric_defs() order
  int suggested_repeat_count = 0;    // kept iterations per run for the suggested limits
};

/// Noise and suggestions from the figures of `runs` A/A runs (at least 2) of `profile`.
/// Metrics whose figures are 0 (no errors) have no relative noise and are skipped.
Calibration calibrate(const std::vector<RunFigures>& runs, const Profile& profile);

/// The console table and the advice, for people.
std::string calibration_report(const Calibration& c);

}  // namespace perfgate
