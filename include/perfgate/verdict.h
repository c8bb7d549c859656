#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "perfgate/exit_status.h"
#include "perfgate/metrics.h"

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
};

/// The judgement of one metric against its baseline and limits.
struct MetricCheck {
  std::string metric;  // contract key, e.g. "latency_p99_ms"
  std::string unit;
  double value = 0;
  std::optional<double> baseline;
  std::optional<double> change_pct;  // (value - baseline) / baseline * 100
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

/// Judges `now` against `baseline` (nullptr when there is none) with the
/// profile's limits. Relative limits need a baseline; absolute ones do not.
/// A saturated run never fails: its fails become warns that say why.
Judgement judge(const MetricSet& now, const MetricSet* baseline, const ThresholdSet& limits,
                const Saturation& saturation);

}  // namespace perfgate
