#pragma once

// Which stored runs a new run is judged against: the last accepted runs
// of the baseline branch, pooled into one sample per metric, and an older window
// for the drift guard.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "perfgate/core/cost_check.h"
#include "perfgate/core/metrics.h"
#include "perfgate/core/verdict.h"
#include "perfgate/store/baseline_store.h"
#include "perfgate/store/run_figures.h"
#include "perfgate/store/run_record.h"

namespace perfgate {

/// The runs a verdict compares with, as one pooled sample.
struct Baseline {
  std::vector<int64_t> run_ids;      // newest first
  std::vector<std::string> commits;  // of run_ids ("" when unknown)
  BaselineSample sample;             // pooled iterations, and each run's figures
};

/// Pools `runs` (each one's kept iterations, and the service's cost where it was
/// measured). `runs` must not be empty.
Baseline pool_runs(const std::vector<RunRecord>& runs);

/// Per metric, the spread of whole runs pooled over groups of `runs` that ran the
/// same code (one commit; without a commit, one branch): see run_noise.h. Metrics
/// without a group of two runs are absent.
std::map<std::string, RunNoise, std::less<>> pooled_noise(const std::vector<RunRecord>& runs);

/// pooled_noise() of the runs a young window takes its noise from: the last 60 of
/// `query`'s profile, hash and host (any branch) that measured their code.
std::map<std::string, RunNoise, std::less<>> store_noise_pool(BaselineStore& store,
                                                              const BaselineQuery& query);

/// How to pick the baseline: the profile's `baseline` settings and the run flags.
struct BaselinePolicy {
  BaselinePolicy() = default;
  BaselinePolicy(int window_runs, int drift_runs, std::optional<int64_t> pinned)
      : window(window_runs), drift_window(drift_runs), pinned_run(pinned) {}

  int window = 5;
  int drift_window = 20;              // 0 = no drift guard
  std::optional<int64_t> pinned_run;  // --baseline-run ID
  /// The judged run's placement class ("apart" / "mixed"; "" when unknown):
  /// runs of the other class are no baseline for it (see select_baseline).
  std::string placement_class;
  double shared_cpu_pct = 0;  // the judged run's, for the notes
};

struct BaselineSelection {
  std::optional<Baseline> baseline;         // nullopt: nothing comparable
  std::optional<Baseline> drift_reference;  // older runs, for the drift guard
  std::vector<std::string> notes;           // why there is none, what was pinned
  /// Why runs existed but none could be compared (another placement class):
  /// the run is inconclusive, not unjudged. "" otherwise.
  std::string incomparable;
  /// The cost phase's counts to compare with: the baseline runs' of the same
  /// cost key (cost_baseline()), or a paired run's other side.
  CostBaseline cost;
};

/// The cost counts of `baseline`'s runs whose cost phase ran with `key`, one
/// unit per run (its launches' median): counts compare only within one key.
CostBaseline cost_baseline(BaselineStore& store, const Baseline& baseline, const std::string& key);

/// The request count the newest stored run of `profile_name` counted with
/// `instrument` took (0: none): `requests: "auto"` keeps it while the pace allows.
int stored_cost_requests(BaselineStore& store, const std::string& profile_name,
                         const std::string& instrument);

/// The launch noise of `profile_name`'s stored runs counted with cost key `key`
/// (pooled_count_noise()): the newest kCountPoolRuns of them with two launches
/// or more, older than run `before_run` when it is not 0 (judging a stored run
/// again sees what it saw). Any branch, any verdict: a run's launches scatter
/// about its own level whatever its code.
CountNoisePool stored_count_noise(BaselineStore& store, const std::string& profile_name,
                                  const std::string& key, int64_t before_run = 0);

/// The last `policy.window` runs eligible for `query` (stopping at the newest
/// accepted run), with the failed runs of their commits on the baseline branch
/// (replicates of the same code: the machine's noise), or the pinned run. A window
/// of fewer than kPooledNoiseBelowRuns runs carries the noise pooled over this
/// host's earlier runs of the profile (pooled_noise()); and, when history is long enough, the
/// window `policy.drift_window` runs back. With `policy.placement_class` set,
/// runs of the other class are left out and older ones of its class looked for
/// (up to the history's bound): on a few cores the scheduler keeps a run's load
/// and service apart or mixed for the whole run, and the two cost the service
/// differently per request (issue 27). When a gated metric of the eligible runs
/// read (window + drift window) has a change point among the newest
/// `policy.window`, only the runs since the newest one are the baseline: an
/// improvement is not averaged with the old level. A regressing change point
/// anywhere among them (a step past the warn limit, as change points are) is
/// no new level until someone accepts a run of it (which ends the eligible
/// runs there): the baseline is the runs before the oldest such step, so a
/// regression that only warned does not become the normal by repetition.
/// Throws Error when the pinned run does not exist or belongs to another
/// profile or hash.
BaselineSelection select_baseline(BaselineStore& store, const BaselineQuery& query,
                                  const BaselinePolicy& policy);

/// A change point in a stored history (change_points.h): the run that opened the
/// new segment of one metric.
struct RunChangePoint {
  std::string metric;
  int64_t run_id = 0;
  std::string commit;
  size_t index = 0;     // of that run in the history searched, oldest first
  double size_pct = 0;  // the step, median after / median before - 1, in %; NaN from 0
  double p = 1;         // permutation p-value
  /// The step is in the metric's worse direction (a step from 0 of a metric
  /// where lower is better too): such a level becomes the baseline only when
  /// a person accepts a run of it (select_baseline()).
  bool regressing = false;
};

/// The least step a change point of `metric` must make to be reported, in %:
/// the metric's warn limit in `limits`, its fail limit when it has no warn
/// limit, kChangePointDefaultStepPct when it has neither (only absolute limits,
/// or none). A smaller step matters to no relative limit, and noise of the
/// machine (a slow day) shows as steps of such size.
double change_point_min_step_pct(const ThresholdSet& limits, std::string_view metric);

/// The least step of a metric without a relative limit: the default warn limit
/// of throughput, the smallest of the default relative limits.
inline constexpr double kChangePointDefaultStepPct = 3.0;

/// The metrics a history is searched in: those with limits in `run`'s stored
/// profile (the gated ones); throughput and p99 when it gates none or no longer parses.
std::vector<std::string> gated_metrics(const RunRecord& run);

/// The default branch's history of `newest`'s series among `runs` (any order):
/// same profile, hash and host, on its baseline branch (its own branch without
/// one), runs that measured their code (complete gate runs, not saturated, not
/// rejected). Oldest first; `newest` included when it qualifies.
std::vector<RunRecord> main_history(const std::vector<RunRecord>& runs, const RunRecord& newest);

/// Change points of each of `metrics` over `history` (oldest first; their stored
/// figures, or their iterations for runs not read from a store), in run order, each at least
/// change_point_min_step_pct() of the newest run's stored limits. A run without a figure of a
/// metric is skipped for it.
std::vector<RunChangePoint> history_change_points(const std::vector<RunRecord>& history,
                                                  const std::vector<std::string>& metrics);

/// How far back a default branch's history is searched for change points
/// (`history`, the notice below), in runs of the series: enough for E-divisive
/// to see levels, a bound on what is read.
inline constexpr int kChangePointRuns = 200;

/// The history change points are searched in: the newest kChangePointRuns runs
/// of `newest`'s default-branch history (main_history), as headers: their
/// stored figures are what the search reads.
std::vector<RunRecord> searched_history(BaselineStore& store, const RunRecord& newest);

/// The change points that `newest`, just stored, brought to light on its
/// default branch: found in the history with it and not without it. A step is
/// seen only once kChangePointMinSegment runs stand after it, so this is the run
/// that confirms a new level. Empty for a run of another branch.
std::vector<RunChangePoint> confirmed_change_points(BaselineStore& store, const RunRecord& newest);

}  // namespace perfgate
