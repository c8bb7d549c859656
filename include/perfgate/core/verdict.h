#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "perfgate/core/exit_status.h"
#include "perfgate/core/metrics.h"
#include "perfgate/core/run_noise.h"

namespace perfgate {

enum class Verdict { kPass, kWarn, kFail, kError };

std::string_view to_string(Verdict v);  // "pass", "warn", "fail", "error"
ExitStatus exit_status_of(Verdict v);
/// The worse of two verdicts (error > fail > warn > pass).
Verdict worst(Verdict a, Verdict b);

/// The load machine itself was the bottleneck: the figures say nothing about the
/// service, so a would-be failure becomes a warning.
struct Saturation {
  bool saturated = false;
  std::vector<std::string> reasons;  // "generator thread 0 at 97% of a core"
  /// Paired mode: a busy host (foreign CPU, steal, CPU pressure) that both sides'
  /// windows shared. Noted, not saturation: the sides alternate within the same
  /// minutes, so such noise cancels in their ratios or, hitting one window, blurs
  /// that pair; it does not favour either side.
  std::vector<std::string> shared;
};

/// The baseline as the verdict sees it: pooled per-iteration samples of the
/// baseline runs, and each run's own figure for the run-to-run spread.
struct BaselineSample {
  RunFigures pooled;
  std::map<std::string, std::vector<double>, std::less<>> run_figures;  // metric -> one per run
  /// Metric -> the spread of whole runs pooled over earlier runs of the same code
  /// on this host (run_noise.h). Used in place of the window's own spread when the
  /// window has fewer than kPooledNoiseBelowRuns runs and the pool rests on more
  /// degrees of freedom than the window's k - 1.
  std::map<std::string, RunNoise, std::less<>> run_noise;
  /// Metric -> the distinct UTC days its run_figures came from; absent: each run
  /// its own day. Runs of one day share its luck, so their mean varies more than
  /// as many runs of as many days would (a young store's main, run several times a
  /// day; issue 46).
  std::map<std::string, int, std::less<>> run_days;
  /// Metric -> figures of the window's period's runs that are no baseline (they
  /// regressed, on this metric or another): those within the metric's warn
  /// limit of the level count toward the window's spread, not its level, so that
  /// leaving them out does not narrow it (issue 46).
  std::map<std::string, std::vector<double>, std::less<>> spread_figures;
  /// Paired mode: pooled's iterations ran side by side with the judged run's, the
  /// i-th beside the i-th, so the test is on their ratios (signed-rank).
  bool paired = false;
  /// What a paired value is: "pairs", or "blocks" of pairs (one launch each).
  std::string paired_unit = "pairs";
};

/// A window of fewer runs than this, or of fewer days, takes the run-to-run
/// noise from the pool (or the stated prior, run_noise_prior()), refined by its own.
inline constexpr int kPooledNoiseBelowRuns = 5;

/// Is a change more than noise? The test behind a relative check (statistics.h).
struct ChangeTest {
  double ci_low_pct = 0;  // confidence interval of the change, in %
  double ci_high_pct = 0;
  double p_value = 1;  // two-sided, of "no change"
  bool significant = false;
  int n_now = 0;   // kept iterations of this run
  int n_base = 0;  // pooled iterations of the baseline
  int baseline_runs = 0;
  std::string method;  // "wilcoxon-signed-rank+hodges-lehmann on log-ratios (exact)"
  /// The change the interval is of, and what the limits are judged on: one
  /// estimate per metric (MetricCheck::change_pct is set to it).
  double estimate_pct = 0;
  double confidence_pct = 95;  // the interval's level: the run's, shared by its gated metrics
  /// False when the samples cannot reach that level at all: the interval is then
  /// the widest available, and the change can be neither significant nor decided.
  bool reaches_level = true;
  /// The change this run detects with kDetectionPower (an interval clear of zero):
  /// half the interval times stats::power_multiplier. nullopt when the level is
  /// out of reach: no change is detectable.
  std::optional<double> detectable_pct;
  /// A sequential look: the interval at the look's estimate level, whose near
  /// end (not the estimate) a fail needs past the fail limit, so that the
  /// looks together fail a change at the limit at most half the time
  /// (SequentialPlan::estimate_confidence). nullopt at one look.
  struct EstimateBound {
    double confidence_pct = 0;
    double ci_low_pct = 0;
    double ci_high_pct = 0;
  };
  std::optional<EstimateBound> estimate_bound;
  /// What n_now counts, for "about N more would decide": "pairs", "blocks" (of
  /// pairs, one launch each), "iterations", or "runs" when whole runs are the
  /// unit (the run-level t test).
  std::string unit = "iterations";
  /// Run-level tests: where the spread of whole runs came from, "window", "pool"
  /// or "prior" (ChangeEstimate::spread); "" for the other tests.
  std::string spread;
};

/// The power at which the detectable change is stated (%).
inline constexpr double kDetectionPower = 80;

/// The judgement of one metric against its baseline and limits.
struct MetricCheck {
  std::string metric;  // contract key, e.g. "latency_p99_ms"
  std::string unit;
  double value = 0;
  std::optional<double> baseline;
  /// (value - baseline) / baseline * 100, as the two figures shown say (the
  /// contract's change_pct). The limits judge the test's estimate instead
  /// (judged_change_pct): a median ratio of pairs, a shift of windows.
  std::optional<double> change_pct;
  std::optional<ChangeTest> test;   // when both sides have per-iteration values
  std::optional<double> drift_pct;  // change against the drift guard's older runs
  Thresholds thresholds;
  bool gated = false;  // has any threshold: reported as a check in JUnit
  Verdict verdict = Verdict::kPass;
  std::string message;  // why, with the numbers: "p99 +23.1% (limit +20%)"
  /// Neither surely past its limits nor surely within its fail limit (or its
  /// level out of reach). A warn that says what would decide, never a pass.
  bool inconclusive = false;
  /// A fail no saturated load machine explains: the error rate's answered
  /// statuses alone surely past its max (a client cannot make a service answer
  /// 404). It stays a fail on a saturated run, where every other fail warns.
  bool fails_when_saturated = false;
};

/// The change the limits judge: the test's estimate where a test was made (the
/// centre of the interval reported beside it), else change_pct.
std::optional<double> judged_change_pct(const MetricCheck& c);

struct Judgement {
  Verdict verdict = Verdict::kPass;
  std::vector<MetricCheck> checks;  // every metric, in metric_defs() order
  std::vector<std::string> notes;   // e.g. saturation downgrades
  /// The level every tested metric was judged at: the run's confidence with its
  /// alpha split over `family` metrics (one false-fail budget per run).
  double confidence_pct = 95;
  /// A metric's share of the budget before a sequential look's level: what a
  /// metric judged once takes (the cost phase's counts, judged after the looks;
  /// at the look's stricter level they spent less than their share).
  double share_pct = 95;
  int family = 0;  // statistically tested metrics sharing the budget
};

/// Whether `check` saw its metric get worse, decided: a fail, or a warn that is
/// not undecided (a change surely inside the warn band, a drift, an error rate or
/// a count past its limit). Such a run is no baseline until accepted; any other
/// run is, an undecided one too (issue 46: otherwise a young store's window never
/// grew past its first run, and a window kept only the runs that landed near it).
bool shows_regression(const MetricCheck& check);
/// Any of `checks` shows a regression.
bool shows_regression(const std::vector<MetricCheck>& checks);

/// How sure a relative fail must be.
struct DecisionSettings {
  double confidence = 95;  // %: the run's whole false-fail budget is 1 - confidence / 100
  /// A sequential look: maps a metric's single-look level (after the family's
  /// split) to the level this look judges at (SequentialPlan::look_confidence).
  std::function<double(double)> look_level = nullptr;
  /// Tested metrics judged outside judge() (the cost phase's counts,
  /// cost_check.h) that share the run's one false-fail budget.
  int extra_family = 0;
  /// A sequential look: the two-sided level (%) whose interval's near end, not
  /// the estimate, must be past the fail limit for a fail
  /// (SequentialPlan::estimate_confidence). nullopt: one look, the estimate.
  std::optional<double> estimate_level = std::nullopt;
};

/// The level each of `family` tested metrics is judged at so that the run as a
/// whole keeps `confidence_pct` (Bonferroni: alpha / family each; for the run's
/// verdict the same as Holm's, whose first step it is).
double family_confidence(double confidence_pct, int family);

/// The most metrics `limits` can put into one run's family: those with a relative
/// limit. Validation's bound; a run counts those it has a test for.
int family_bound(const ThresholdSet& limits);

/// The fewest pairs whose signed-rank interval can reach `confidence_pct` at all:
/// n pairs all one way have the exact two-sided p of 2 / 2^n.
int min_pairs_to_reach(double confidence_pct);

/// Judges `now` against `baseline` (nullptr when there is none) with the
/// profile's limits. Relative limits need a baseline; absolute ones do not.
/// In the regressing direction, with the estimate e and its interval lo..hi at
/// the family's level: fail when e (at a sequential look, the near end of its
/// interval at the look's estimate level) is past the fail limit and lo past the warn
/// limit (the change is surely bigger than tolerated); pass only when hi is
/// within the fail limit (equivalence at the same level); warn when e is past
/// warn, lo past zero and hi within the fail limit; anything else is
/// inconclusive (warn), saying what would decide. An error-rate max fails when
/// the rate's lower bound, widened by the bursts its windows show, is past it
/// at 1 - alpha/2, and warns when it is past it at 1 - alpha (error_rate.h);
/// over the max within the noise, it passes and says so. With a
/// `drift_reference`, a run within its limits that has drifted significantly past
/// the fail limit against those older runs warns. A saturated run fails only
/// where its answered statuses alone put the error rate surely past its max
/// (MetricCheck::fails_when_saturated); its other fails become warns that say why.
Judgement judge(const RunFigures& now, const BaselineSample* baseline, const ThresholdSet& limits,
                const Saturation& saturation, const DecisionSettings& settings = {},
                const BaselineSample* drift_reference = nullptr);

}  // namespace perfgate
