#pragma once

#include <string>
#include <vector>

#include "perfgate/core/cost_run.h"
#include "perfgate/core/verdict.h"

namespace perfgate {

/// What the cost metrics of a run are judged against: one value per unit, a
/// launch of the other side (paired mode) or a stored run (its launches' median).
struct CostBaseline {
  std::vector<MetricSet> units;
  std::string unit = "launches";  // "launches" or "runs"
};

/// Cost metrics with a relative limit and values on both sides: each spends a
/// share of the run's one false-fail budget, as a timed metric does.
int cost_family(const CostRun& now, const CostBaseline* baseline, const ThresholdSet& limits);

/// A launch spread past this share of the fail limit leaves the counts too
/// noisy to pass at that limit: the check is inconclusive, naming the usual causes.
inline constexpr double kMaxSpreadShareOfFail = 0.25;

/// Judges each cost metric of `now` that has values, against `baseline` (nullptr
/// or empty: none yet). The estimate is the ratio of the sides' geometric means;
/// its interval, a two-sample t interval on the launches' log counts at
/// `level_pct` (two-sided), collapses to the estimate when every launch of both
/// sides counted the same. Three answers: fail when the estimate is past the fail
/// limit and the interval wholly past the warn limit; pass when the interval's
/// regressing end is within the fail limit and the launches agree; otherwise a
/// warn (surely past the warn limit) or inconclusive, saying what would decide.
std::vector<MetricCheck> check_costs(const CostRun& now, const CostBaseline* baseline,
                                     const ThresholdSet& limits, double level_pct);

/// check_costs() at `j`'s level, appended to its checks and its verdict. The
/// load machine's saturation does not touch them: no neighbour moves a count.
void add_cost_checks(Judgement& j, const CostRun& now, const CostBaseline* baseline,
                     const ThresholdSet& limits);

}  // namespace perfgate
