#pragma once

// Sequential runs: after the planned `repeat.count` iterations (or pairs), a run
// whose change is still undecided against its limits measures more, a small
// batch at a time, up to `repeat.max_count`. Every look judges at a stricter
// level so that stopping when a look happens to say "fail" cannot raise the
// false-fail rate above alpha: in paired mode an alpha-spending boundary
// computed for the signed-rank test (spending_boundary.h), in stored mode alpha
// split evenly over the looks (Bonferroni). A look may also stop for futility:
// the change can plausibly neither fail nor pass by max_count. See
// docs/statistics.md, "Sequential runs".

#include <optional>
#include <string>
#include <vector>

#include "perfgate/core/spending_boundary.h"
#include "perfgate/core/verdict.h"

namespace perfgate {

/// The boundary paired mode's sequential runs spend alpha by (chosen by the
/// simulation in tests/sequential_test.cc; docs/statistics.md).
inline constexpr Spending kPairedSpending = Spending::kPocock;

/// How far a run may extend.
struct SequentialPlan {
  int count = 0;      // planned iterations (pairs), as repeat.count
  int max_count = 0;  // the most it may take; <= count: no extension
  int batch = 2;      // measured per extension
  Spending spending = Spending::kBonferroni;
  int discard = 0;          // repeat.discard: not tested at the first look
  int block = 1;            // paired.block: the test counts blocks of this many pairs
  bool futility = false;    // may stop early when a fail is out of reach
  double confidence = 95;   // the run's confidence (%), before any split
  bool budget_cut = false;  // max_count lowered to what repeat.budget allows

  bool extends() const { return max_count > count; }
  /// Looks at the data: once at count, then after each batch up to max_count.
  int looks() const;
  /// The look (0-based) made after `taken` iterations (pairs).
  int look_of(int taken) const;
  /// Values the test has after `taken`: kept pairs, or blocks with paired.block.
  int kept(int taken) const;
  /// The Bonferroni level: 100 * (1 - alpha / looks()), alpha = 1 -
  /// confidence_pct / 100. Equals `confidence_pct` without extension.
  double look_confidence(double confidence_pct) const;
  /// The level (%) the look after `taken` judges a metric at whose single-look
  /// level is `confidence_pct`: Bonferroni's, or the spending boundary's.
  double look_confidence(double confidence_pct, int taken) const;
  /// The two-sided level (%) of the interval whose near end, at the look after
  /// `taken`, a fail needs past the fail limit: the estimate's one-sided 50 %
  /// spent over the looks as alpha is (estimate_boundary; Bonferroni: 50 % /
  /// looks each). nullopt without extension: one look judges the estimate.
  std::optional<double> estimate_confidence(int taken) const;
  /// Whether some look could fail at all at a single-look `confidence_pct`.
  bool can_ever_fail(double confidence_pct) const;
  /// How many to measure next after `taken`: at most batch, never past max_count.
  int next_batch(int taken) const;
};

/// A gated check that has neither crossed into a fail (estimate past the fail
/// limit, or at a sequential look the near end of its interval at the look's
/// estimate level; the interval's near end past the warn limit) nor lies surely within its
/// fail limit (interval's far end within it), whose test cannot reach its
/// level, or that is inconclusive: more data could still decide it. A fail
/// crossing is decided even when its interval straddles the fail limit: the
/// run stops there. A check without a test (no baseline, or absolute limits
/// only) is decided: more data would not change it.
bool undecided(const MetricCheck& check);

/// The change this run detects with kDetectionPower (80 %) for a check: an
/// interval clear of zero, in %. nullopt without a test, or when the test
/// cannot reach its level (no change is detectable).
std::optional<double> detectable_change_pct(const MetricCheck& check);

/// What a look decided.
struct SequentialStep {
  bool more = false;                   // measure another batch
  std::vector<std::string> undecided;  // the metrics that asked for it
  std::vector<std::string> futile;     // undecided, but neither a fail nor a pass is in reach
  /// Metrics that failed at this look: the run's verdict is decided, and it
  /// stops, whatever is still undecided (more pairs could only undo the fail).
  std::vector<std::string> failed;
};

/// Below this conditional power a fail (and a pass) is out of reach: the
/// futility stop, when both are.
inline constexpr double kFutilityPower = 0.10;

/// The chance that `check` fails by the plan's last look, whose level is
/// `final_pct`, if the true change were the look's interval's regressing end
/// (the most it plausibly is): a normal approximation on the log scale, the
/// spread read off the look's interval. Below kFutilityPower a fail is out of
/// reach. nullopt when it cannot be told (no test, level out of reach, no fail
/// limit, nothing left to measure).
/// `final_estimate_pct` is the last look's estimate level (0: the estimate
/// itself, SequentialPlan::estimate_confidence).
std::optional<double> conditional_power(const MetricCheck& check, int taken,
                                        const SequentialPlan& plan, double final_pct,
                                        double final_estimate_pct = 0);

/// The chance, likewise, that `check` passes by the plan's last look (its
/// interval's far end within the fail limit, the warn limit without one), if
/// the true change were the interval's other end (the least it plausibly is).
std::optional<double> conditional_pass_power(const MetricCheck& check, int taken,
                                             const SequentialPlan& plan, double final_pct);

/// Measure more when some gated metric is undecided (and, with plan.futility,
/// could still plausibly fail or pass), the run is not saturated, no signal asked to
/// stop and `taken` < max_count.
SequentialStep next_step(const Judgement& judgement, bool saturated, bool stopped, int taken,
                         const SequentialPlan& plan);

/// Why a sequential run stopped, for the notes and the JSON: "decided after 8
/// pairs", "max_count 16 reached: still undecided (throughput_rps)", "futility
/// after 8 pairs: ...".
std::string stop_reason(const SequentialStep& last, bool saturated, bool stopped, int taken,
                        const SequentialPlan& plan, const std::string& unit);

}  // namespace perfgate
