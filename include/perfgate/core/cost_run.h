#pragma once

#include <string>
#include <vector>

#include "perfgate/core/metrics.h"

namespace perfgate {

/// The cost phase of one side of a run: the service launched again under an
/// instrument that counts instead of timing, exactly `requests` requests in a
/// fixed order per launch. Counts do not move with the runner's neighbours,
/// steal or frequency, only with the code, the instrument and the CPU model.
struct CostRun {
  std::string instrument;  // "callgrind" or "perf"; "" when the phase did not run
  /// What two runs must share for their counts to compare: the instrument and
  /// its version and options, the CPU's vendor, model and flags, glibc's
  /// version, the phase's requests and connections.
  std::string key;
  int requests = 0;     // counted requests per launch
  int connections = 0;  // over which they were sent
  /// Per launch: cost metric key (cost_metric_defs()) -> count per request.
  std::vector<MetricSet> launches;
  std::string skipped;  // why the phase did not run ("" when it ran or was off)
  double seconds = 0;   // the phase's wall time, every launch included
  bool ran() const { return !launches.empty(); }
  /// One metric's per-request value of each launch, in launch order.
  std::vector<double> values(std::string_view metric) const;
  /// The largest relative difference between two launches of one metric, in
  /// percent: 0 when every launch counted the same.
  double spread_pct(std::string_view metric) const;
  friend bool operator==(const CostRun&, const CostRun&) = default;
};

/// The counted requests of a launch under `requests: "auto"`: the largest of
/// 1000, 500, 200, 100, 50 and 20, at most `ceiling`, whose requests at the
/// warm-up's `seconds_per_request` take no more than `count_time_s` (20 at the
/// least). `series`: the count earlier runs of the profile took (0: none), kept
/// while the pace asks for between a third and three times it: a pace that
/// moves with the runner's load does not start a new cost key (the count is
/// part of it) at every run. An unknown pace (0: no warm-up) keeps the series'
/// count, else takes `ceiling`.
int auto_requests(double seconds_per_request, double count_time_s, int ceiling, int series = 0);

/// Warm-up requests an automatic count's first launch takes its pace from: the
/// first third untimed (Valgrind translates the code they reach), the rest timed.
inline constexpr int kPaceProbe = 30;

/// The warm-up of an automatic count: a fifth of it, at least the pace probe's
/// kPaceProbe, at most `most` (the profile's warmup_requests). 1000 requests
/// keep the default 200.
int auto_warmup(int requests, int most);

/// The estimated cycles of callgrind's cache simulation, a model (CodSpeed's and
/// iai-callgrind's): L1 hits + 5 x last-level hits + 35 x memory accesses.
double estimated_cycles(double l1_hits, double ll_hits, double ram_hits);

}  // namespace perfgate
