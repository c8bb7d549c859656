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
  return std::max(0, std::min(batch, max_count - taken));
}

bool undecided(const MetricCheck& c) {
  if (!c.gated || !c.test) return false;
  // A run-level test judges this run's figure against whole runs: more
  // iterations of this launch cannot narrow it, only more launches could, so
  // measuring on would double the time for nothing (issue 26, finding 9).
  if (c.test->unit == "runs") return false;
  // A look whose test cannot reach its level, or could not have told a
  // fail-sized change, has decided nothing: more data can.
  if (c.inconclusive || !c.test->reaches_level) return true;
  const MetricDef* def = find_metric(c.metric);
  if (!def) return false;
  // The interval in the regressing direction: positive is worse.
  bool higher = def->better == Better::kHigher;
  double low = higher ? -c.test->ci_high_pct : c.test->ci_low_pct;
  double high = higher ? -c.test->ci_low_pct : c.test->ci_high_pct;
  for (auto limit : {c.thresholds.warn_pct, c.thresholds.fail_pct})
    if (limit && low < *limit && *limit < high) return true;
  return false;
}

std::optional<double> detectable_change_pct(const MetricCheck& c) {
  if (!c.test) return std::nullopt;
  return c.test->detectable_pct;
}

std::optional<double> conditional_power(const MetricCheck& c, int taken, const SequentialPlan& plan,
                                        double final_pct) {
  const MetricDef* def = find_metric(c.metric);
  if (!def || !c.test || !c.test->reaches_level || !c.thresholds.fail_pct) return std::nullopt;
  int n = c.test->n_now, m = plan.kept(plan.max_count) - plan.kept(taken);
  if (n < 2 || m < 1) return std::nullopt;
  // On the log scale, in the regressing direction (positive is worse).
  bool higher = def->better == Better::kHigher;
  auto worse = [&](double pct) { return (higher ? -1 : 1) * std::log1p(pct / 100); };
  double e = worse(c.test->estimate_pct);
  double width = std::fabs(worse(c.test->ci_high_pct) - worse(c.test->ci_low_pct));
  double z_look = stats::normal_quantile(0.5 + c.test->confidence_pct / 200);
  double z_final = stats::normal_quantile(0.5 + std::min(final_pct, 99.9999999) / 200);
  double sigma = width / (2 * z_look) * std::sqrt(static_cast<double>(n));  // one value's spread
  double total = n + m;
  // A fail at the last look: its estimate past the fail limit and its interval's
  // near end past the warn limit.
  double needed = std::max(
      std::log1p(*c.thresholds.fail_pct / 100),
      std::log1p(c.thresholds.warn_pct.value_or(0) / 100) + z_final * sigma / std::sqrt(total));
  // The last look's estimate under the trend: mean e, the new values' noise only.
  double spread = sigma * std::sqrt(static_cast<double>(m)) / total;
  if (spread <= 0) return e > needed ? 1.0 : 0.0;
  return 1 - stats::normal_cdf((needed - e) / spread);
}

SequentialStep next_step(const Judgement& judgement, bool saturated, bool stopped, int taken,
                         const SequentialPlan& plan) {
  SequentialStep step;
  double final_pct = plan.look_confidence(
      family_confidence(plan.confidence, std::max(judgement.family, 1)), plan.max_count);
  for (const auto& c : judgement.checks) {
    if (!undecided(c)) continue;
    // Non-binding futility: stopping cannot add a fail, only forgo one.
    auto power = plan.futility && c.verdict != Verdict::kFail
                     ? conditional_power(c, taken, plan, final_pct)
                     : std::nullopt;
    (power && *power < kFutilityPower ? step.futile : step.undecided).push_back(c.metric);
  }
  // A saturated load machine or a signal is not something more windows fix.
  step.more = !step.undecided.empty() && !saturated && !stopped && plan.next_batch(taken) > 0;
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
           " could not plausibly reach the fail limit by max_count " +
           std::to_string(plan.max_count) + " (conditional power under the trend below 10%)";
  if (last.undecided.empty()) return "decided after " + after;
  std::string which = " (";
  for (size_t i = 0; i < last.undecided.size(); ++i) which += (i ? ", " : "") + last.undecided[i];
  which += ")";
  if (stopped) return "stopped by a signal after " + after + ": still undecided" + which;
  if (saturated) return "load machine saturated after " + after + ": still undecided" + which;
  return "max_count " + std::to_string(plan.max_count) + " reached: still undecided" + which;
}

}  // namespace perfgate
