#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "perfgate/core/cost_run.h"
#include "perfgate/core/verdict.h"

namespace perfgate {

/// How far the launches of one run scatter about their run's own level, on log
/// counts, pooled over earlier runs of one cost key: what two launches of this
/// run cannot tell on their own (issue 47).
struct CountNoise {
  double log_var = 0;  // pooled within-run variance of log counts
  double df = 0;       // sum over the runs of (launches - 1)
  int runs = 0;        // runs with two launches or more
};
using CountNoisePool = std::map<std::string, CountNoise, std::less<>>;

/// Per cost metric, the within-run noise of `runs`' launches (each run one
/// group: its launches about their own mean). Runs of fewer than two positive
/// launches add nothing; a metric none of them has two of is absent.
CountNoisePool pooled_count_noise(std::span<const CostRun> runs);

/// What the cost metrics of a run are judged against: one value per unit, a
/// launch of the other side (paired mode) or a stored run (its launches' median).
struct CostBaseline {
  std::vector<MetricSet> units;
  std::string unit = "launches";  // "launches" or "runs"
  /// Earlier runs' launch noise of the same cost key: combined with this run's
  /// own where its launches do not scatter significantly more (F test), so
  /// that two launches a side need not carry the whole burden.
  CountNoisePool pool;
};

/// Cost metrics with a relative limit and values on both sides: each spends a
/// share of the run's one false-fail budget, as a timed metric does.
int cost_family(const CostRun& now, const CostBaseline* baseline, const ThresholdSet& limits);

/// A launch spread past this share of the fail limit leaves the counts too
/// noisy to pass at that limit: the check is inconclusive, naming the usual causes.
inline constexpr double kMaxSpreadShareOfFail = 0.25;
/// From this many launches a side (both sides, where the baseline's units are
/// launches) the noise check gives way to the t interval: their spread is then
/// the test's own, not a lucky pair's. So it does where a pool of earlier runs'
/// launch noise joins the test with at least the degrees of freedom of four
/// launches a side.
inline constexpr int kTrustedLaunches = 4;
/// Earlier runs a cost pool reads at most (the newest of the key).
inline constexpr int kCountPoolRuns = 30;

/// Judges each cost metric of `now` that has values, against `baseline` (nullptr
/// or empty: none yet). The estimate is the ratio of the sides' geometric means;
/// its interval, a two-sample t interval on the launches' log counts at
/// `level_pct` (two-sided), with `baseline->pool`'s noise where the launches
/// agree with it, collapses to the estimate when every launch of both
/// sides counted the same. Three answers: fail when the estimate is past the fail
/// limit and the interval wholly past the warn limit; pass when the interval's
/// regressing end is within the fail limit and the launches agree; otherwise a
/// warn (surely past the warn limit) or inconclusive, saying what would decide.
std::vector<MetricCheck> check_costs(const CostRun& now, const CostBaseline* baseline,
                                     const ThresholdSet& limits, double level_pct);

/// check_costs() at `j`'s level, appended to its checks and its verdict. The
/// load machine's saturation does not touch them: no neighbour moves a count.
/// `looks`: how many times the phase may judge its counts (2 where a paired
/// phase may add launches, cost.max_launches): each look at 1/looks of the
/// metric's share of the false-fail budget.
void add_cost_checks(Judgement& j, const CostRun& now, const CostBaseline* baseline,
                     const ThresholdSet& limits, int looks = 1);

/// A gated count check more launches could still change: inconclusive, or
/// past the warn limit with its interval reaching past the fail limit (a fail
/// not yet sure). Fails, passes and warns surely within the fail limit are decided.
bool count_undecided(const MetricCheck& check);

/// How many launches a side an inconclusive count check would need to decide
/// (its interval narrowed to the room between warn and fail limits, at 80 %
/// power); 0 when it cannot be told (no test, no fail limit, exact counts).
int launches_to_decide(const MetricCheck& check);

}  // namespace perfgate
