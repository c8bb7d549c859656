#pragma once

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
  /// Paired mode: pooled's iterations ran side by side with the judged run's, the
  /// i-th beside the i-th, so the test is on their ratios (signed-rank).
  bool paired = false;
};

/// A window of fewer runs than this takes the run-to-run noise from the pool.
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
  std::string method;  // "mann-whitney+hodges-lehmann (exact), run-level t (5 runs)"
};

/// The judgement of one metric against its baseline and limits.
struct MetricCheck {
  std::string metric;  // contract key, e.g. "latency_p99_ms"
  std::string unit;
  double value = 0;
  std::optional<double> baseline;
  std::optional<double> change_pct;  // (value - baseline) / baseline * 100
  std::optional<ChangeTest> test;    // when both sides have per-iteration values
  std::optional<double> drift_pct;   // change against the drift guard's older runs
  Thresholds thresholds;
  bool gated = false;  // has any threshold: reported as a check in JUnit
  Verdict verdict = Verdict::kPass;
  std::string message;  // why, with the numbers: "p99 +23.1% (limit +20%)"
};

struct Judgement {
  Verdict verdict = Verdict::kPass;
  std::vector<MetricCheck> checks;  // every metric, in metric_defs() order
  std::vector<std::string> notes;   // e.g. saturation downgrades
};

/// How sure a relative fail must be.
struct DecisionSettings {
  double confidence = 95;  // %: a fail needs p < 1 - confidence / 100
};

/// Judges `now` against `baseline` (nullptr when there is none) with the
/// profile's limits. Relative limits need a baseline; absolute ones do not.
/// Past the fail limit and significant: fail; past it but within the noise, or
/// past the warn limit: warn; an improvement never fails. With a
/// `drift_reference`, a run within its limits that has drifted significantly past
/// the fail limit against those older runs warns. A saturated run never fails:
/// its fails become warns that say why.
Judgement judge(const RunFigures& now, const BaselineSample* baseline, const ThresholdSet& limits,
                const Saturation& saturation, const DecisionSettings& settings = {},
                const BaselineSample* drift_reference = nullptr);

}  // namespace perfgate
