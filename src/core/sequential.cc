#include "perfgate/core/sequential.h"

#include <algorithm>
#include <cmath>

#include "perfgate/core/metrics.h"
#include "perfgate/core/statistics.h"

namespace perfgate {
namespace {

// The tested counts at every look, for the boundary's table.
std::vector<int> look_counts(const SequentialPlan& plan) {
  std::vector<int> ns;
  for (int k = 0; k < plan.looks(); ++k)
    ns.push_back(std::max(1, plan.kept(std::min(plan.max_count, plan.count + k * plan.batch))));
  return ns;
}

}  // namespace

int SequentialPlan::looks() const {
  if (!extends() || batch < 1) return 1;
  return 1 + (max_count - count + batch - 1) / batch;
}

int SequentialPlan::look_of(int taken) const {
  if (!extends() || batch < 1 || taken <= count) return 0;
  return std::min(looks() - 1, (taken - count + batch - 1) / batch);
}

int SequentialPlan::kept(int taken) const {
  int b = std::max(block, 1);
  return (taken + b - 1) / b - discard / b;
}

double SequentialPlan::look_confidence(double confidence_pct) const {
  double alpha = 1 - confidence_pct / 100;
  return 100 * (1 - alpha / looks());
}

double SequentialPlan::look_confidence(double confidence_pct, int taken) const {
  if (!extends() || spending == Spending::kBonferroni) return look_confidence(confidence_pct);
  return signed_rank_boundary(spending, look_counts(*this), confidence_pct)[look_of(taken)]
      .confidence_pct;
}

std::optional<double> SequentialPlan::estimate_confidence(int taken) const {
  if (!extends()) return std::nullopt;
  if (spending == Spending::kBonferroni) return 100 * (1 - 2 * kEstimateAlpha / looks());
  return estimate_boundary(spending, look_counts(*this))[look_of(taken)].confidence_pct;
}

bool SequentialPlan::can_ever_fail(double confidence_pct) const {
  // Past kExactMaxPairs the boundary's levels stay below 100 - 2e-7 %, which 30
  // values reach: some look can fail, without simulating thousands of looks.
  if (extends() && spending != Spending::kBonferroni && kept(max_count) > kExactMaxPairs)
    return true;
  if (extends() && spending != Spending::kBonferroni) {
    const auto& table = signed_rank_boundary(spending, look_counts(*this), confidence_pct);
    return std::any_of(table.begin(), table.end(), [](const auto& l) { return l.reachable; });
  }
  // Bonferroni: the level is the same at every look, the last has the most values.
  int last = kept(extends() ? max_count : count);
  return last > 0 && last >= min_pairs_to_reach(look_confidence(confidence_pct));
}

int SequentialPlan::next_batch(int taken) const {
  int n = std::max(0, std::min(batch, max_count - taken));
  // Whole launches only: a block's pairs share one launch, and a batch that
  // ended mid-block would test a launch's pairs as if they were another's.
  int b = std::max(block, 1);
  return n - n % b;
}

bool undecided(const MetricCheck& c) {
  if (!c.gated || !c.test) return false;
  // A run-level test judges this run's figure against whole runs: more
  // iterations of this launch cannot narrow it, only more launches could, so
  // measuring on would double the time for nothing (issue 26, finding 9).
  if (c.test->unit == "runs") return false;
  // A look whose test cannot reach its level, or that is inconclusive, has
  // decided nothing: more data can.
  if (c.inconclusive || !c.test->reaches_level) return true;
  const MetricDef* def = find_metric(c.metric);
  if (!def) return false;
  const auto& t = c.thresholds;
  auto pass = t.fail_pct ? t.fail_pct : t.warn_pct;
  if (!pass) return false;
  // The interval and estimate in the regressing direction: positive is worse.
  bool higher = def->better == Better::kHigher;
  double low = higher ? -c.test->ci_high_pct : c.test->ci_low_pct;
  double high = higher ? -c.test->ci_low_pct : c.test->ci_high_pct;
  // What the fail limit judges: the estimate, or at a sequential look its
  // interval's near end at the look's estimate level.
  const auto& bound = c.test->estimate_bound;
  double e = higher ? -(bound ? bound->ci_high_pct : c.test->estimate_pct)
                    : (bound ? bound->ci_low_pct : c.test->estimate_pct);
  // Decided: surely within the fail limit (pass, or a warn inside it), or a
  // fail crossing, which stops the run at once whatever its interval's far
  // end: the boundaries bound the chance that any look crosses, so a later
  // look may not undo it (issue 39, finding 2).
  if (high <= *pass) return false;
  double floor = t.fail_pct ? t.warn_pct.value_or(0) : 0;
  return !(e > *pass && low > floor);
}

std::optional<double> detectable_change_pct(const MetricCheck& c) {
  if (!c.test) return std::nullopt;
  return c.test->detectable_pct;
}

namespace {

// The last look's estimate if the true change were `end` of the look's
// interval (the end that favours the answer asked about: reachable means
// plausible, not likely under the trend), on the log scale in the regressing
// direction: its mean, its deviation from the values still to come, and one
// value's spread.
enum class End { kRegressing, kImproving };

struct Trend {
  double e = 0, spread = 0, sigma = 0, total = 0, z_final = 0;
};

std::optional<Trend> trend(const MetricCheck& c, int taken, const SequentialPlan& plan,
                           double final_pct, End end) {
  const MetricDef* def = find_metric(c.metric);
  if (!def || !c.test || !c.test->reaches_level) return std::nullopt;
  int n = c.test->n_now, m = plan.kept(plan.max_count) - plan.kept(taken);
  if (n < 2 || m < 1) return std::nullopt;
  bool higher = def->better == Better::kHigher;
  auto worse = [&](double pct) { return (higher ? -1 : 1) * std::log1p(pct / 100); };
  Trend t;
  double a = worse(c.test->ci_low_pct), b = worse(c.test->ci_high_pct);
  t.e = end == End::kRegressing ? std::max(a, b) : std::min(a, b);
  double width = std::fabs(b - a);
  double z_look = stats::normal_quantile(0.5 + c.test->confidence_pct / 200);
  t.z_final = stats::normal_quantile(0.5 + std::min(final_pct, 99.9999999) / 200);
  t.sigma = width / (2 * z_look) * std::sqrt(static_cast<double>(n));
  t.total = n + m;
  t.spread = t.sigma * std::sqrt(static_cast<double>(m)) / t.total;
  return t;
}

// P(the last look's estimate is past `needed`), or below it with `below`.
double chance(const Trend& t, double needed, bool below) {
  if (t.spread <= 0) return (below ? t.e <= needed : t.e > needed) ? 1.0 : 0.0;
  double past = 1 - stats::normal_cdf((needed - t.e) / t.spread);
  return below ? 1 - past : past;
}

}  // namespace

std::optional<double> conditional_power(const MetricCheck& c, int taken, const SequentialPlan& plan,
                                        double final_pct, double final_estimate_pct) {
  if (!c.thresholds.fail_pct) return std::nullopt;
  auto t = trend(c, taken, plan, final_pct, End::kRegressing);
  if (!t) return std::nullopt;
  // A fail at the last look: its estimate (its bound at the estimate level)
  // past the fail limit and its interval's near end past the warn limit.
  double z_estimate =
      final_estimate_pct > 0
          ? stats::normal_quantile(0.5 + std::min(final_estimate_pct, 99.9999999) / 200)
          : 0;
  double se = t->sigma / std::sqrt(t->total);
  double needed = std::max(std::log1p(*c.thresholds.fail_pct / 100) + z_estimate * se,
                           std::log1p(c.thresholds.warn_pct.value_or(0) / 100) + t->z_final * se);
  return chance(*t, needed, false);
}

std::optional<double> conditional_pass_power(const MetricCheck& c, int taken,
                                             const SequentialPlan& plan, double final_pct) {
  auto limit = c.thresholds.fail_pct ? c.thresholds.fail_pct : c.thresholds.warn_pct;
  if (!limit) return std::nullopt;
  auto t = trend(c, taken, plan, final_pct, End::kImproving);
  if (!t) return std::nullopt;
  // A pass at the last look: its interval's far end within the fail limit.
  double needed = std::log1p(*limit / 100) - t->z_final * t->sigma / std::sqrt(t->total);
  return chance(*t, needed, true);
}

SequentialStep next_step(const Judgement& judgement, bool saturated, bool stopped, int taken,
                         const SequentialPlan& plan) {
  SequentialStep step;
  double final_pct = plan.look_confidence(
      family_confidence(plan.confidence, std::max(judgement.family, 1)), plan.max_count);
  double final_estimate_pct = plan.estimate_confidence(plan.max_count).value_or(0);
  for (const auto& c : judgement.checks) {
    if (c.verdict == Verdict::kFail && !c.inconclusive) step.failed.push_back(c.metric);
    if (!undecided(c)) continue;
    // Non-binding futility: stopping cannot add a fail, only forgo one. Only
    // when neither answer is within reach: an A/A run, which cannot fail, may
    // still pass by max_count (issue 39, finding 1).
    // At the last look there is nothing left to forgo: undecided, and the
    // stop reason says max_count or the budget.
    bool futile = false;
    if (plan.futility && plan.next_batch(taken) > 0) {
      auto fail = conditional_power(c, taken, plan, final_pct, final_estimate_pct);
      auto pass = conditional_pass_power(c, taken, plan, final_pct);
      futile = fail && pass && *fail < kFutilityPower && *pass < kFutilityPower;
    }
    (futile ? step.futile : step.undecided).push_back(c.metric);
  }
  // A saturated load machine or a signal is not something more windows fix. A
  // fail decides the run: stopping at the first crossing keeps a later look
  // from undoing it (issue 39, finding 2), whichever metric crossed; measuring
  // on for another metric spent the budget on a verdict already given.
  step.more = !step.undecided.empty() && step.failed.empty() && !saturated && !stopped &&
              plan.next_batch(taken) > 0;
  return step;
}

std::string stop_reason(const SequentialStep& last, bool saturated, bool stopped, int taken,
                        const SequentialPlan& plan, const std::string& unit) {
  std::string after = std::to_string(taken) + " " + unit;
  auto listed = [](const std::vector<std::string>& metrics) {
    std::string text;
    for (size_t i = 0; i < metrics.size(); ++i) text += (i ? ", " : "") + metrics[i];
    return text;
  };
  if (last.undecided.empty() && !last.futile.empty())
    return "futility after " + after + ": " + listed(last.futile) +
           " could plausibly neither fail nor pass by max_count " + std::to_string(plan.max_count) +
           " (below 10% even at the end of its interval that favours each)";
  if (last.undecided.empty()) return "decided after " + after;
  std::string which = " (" + listed(last.undecided) + ")";
  if (!last.failed.empty())
    return "failed after " + after + " (" + listed(last.failed) +
           "): more could not undo the run's fail; still undecided" + which;
  if (stopped) return "stopped by a signal after " + after + ": still undecided" + which;
  if (saturated) return "load machine saturated after " + after + ": still undecided" + which;
  if (plan.budget_cut) return "repeat.budget reached after " + after + ": still undecided" + which;
  return "max_count " + std::to_string(plan.max_count) + " reached: still undecided" + which;
}

}  // namespace perfgate
