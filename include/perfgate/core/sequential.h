#pragma once

// Sequential runs: after the planned `repeat.count` iterations (or pairs), a run
// whose change is still undecided against its limits measures more, a small
// batch at a time, up to `repeat.max_count`. Every look judges at a stricter
// level, alpha split over the planned looks (Bonferroni), so that stopping when
// a look happens to say "fail" cannot raise the false-fail rate above alpha.
// See docs/statistics.md, "Sequential runs".

#include <optional>
#include <string>
#include <vector>

#include "perfgate/core/verdict.h"

namespace perfgate {

/// How far a run may extend.
struct SequentialPlan {
  int count = 0;      // planned iterations (pairs), as repeat.count
  int max_count = 0;  // the most it may take; <= count: no extension
  int batch = 2;      // measured per extension

  bool extends() const { return max_count > count; }
  /// Looks at the data: once at count, then after each batch up to max_count.
  int looks() const;
  /// The confidence (%) every look judges at: 100 * (1 - alpha / looks()),
  /// alpha = 1 - confidence_pct / 100. Equals `confidence_pct` without extension.
  double look_confidence(double confidence_pct) const;
  /// How many to measure next after `taken`: at most batch, never past max_count.
  int next_batch(int taken) const;
};

/// A gated check whose interval straddles one of its relative limits (warn or
/// fail), whose test cannot reach its level, or that is inconclusive (could not
/// have failed): more data could still move its verdict. A check without a test
/// (no baseline, or absolute limits only) is decided: more data would not change it.
bool undecided(const MetricCheck& check);

/// The change this run detects with kDetectionPower (80 %) for a check: an
/// interval clear of zero, in %. nullopt without a test, or when the test
/// cannot reach its level (no change is detectable).
std::optional<double> detectable_change_pct(const MetricCheck& check);

/// What a look decided.
struct SequentialStep {
  bool more = false;                   // measure another batch
  std::vector<std::string> undecided;  // the metrics that asked for it
};

/// Measure more when some gated metric is undecided, the run is not saturated,
/// no signal asked to stop and `taken` < max_count.
SequentialStep next_step(const Judgement& judgement, bool saturated, bool stopped, int taken,
                         const SequentialPlan& plan);

/// Why a sequential run stopped, for the notes and the JSON: "decided after 8
/// pairs", "max_count 16 reached: still undecided (throughput_rps)".
std::string stop_reason(const SequentialStep& last, bool saturated, bool stopped, int taken,
                        const SequentialPlan& plan, const std::string& unit);

}  // namespace perfgate
