#include "perfgate/core/sequential.h"

#include <algorithm>

#include "perfgate/core/metrics.h"

namespace perfgate {

int SequentialPlan::looks() const {
  if (!extends() || batch < 1) return 1;
  return 1 + (max_count - count + batch - 1) / batch;
}

double SequentialPlan::look_confidence(double confidence_pct) const {
  double alpha = 1 - confidence_pct / 100;
  return 100 * (1 - alpha / looks());
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

SequentialStep next_step(const Judgement& judgement, bool saturated, bool stopped, int taken,
                         const SequentialPlan& plan) {
  SequentialStep step;
  for (const auto& c : judgement.checks)
    if (undecided(c)) step.undecided.push_back(c.metric);
  // A saturated load machine or a signal is not something more windows fix.
  step.more = !step.undecided.empty() && !saturated && !stopped && plan.next_batch(taken) > 0;
  return step;
}

std::string stop_reason(const SequentialStep& last, bool saturated, bool stopped, int taken,
                        const SequentialPlan& plan, const std::string& unit) {
  std::string after = std::to_string(taken) + " " + unit;
  if (last.undecided.empty()) return "decided after " + after;
  std::string which = " (";
  for (size_t i = 0; i < last.undecided.size(); ++i) which += (i ? ", " : "") + last.undecided[i];
  which += ")";
  if (stopped) return "stopped by a signal after " + after + ": still undecided" + which;
  if (saturated) return "load machine saturated after " + after + ": still undecided" + which;
  return "max_count " + std::to_string(plan.max_count) + " reached: still undecided" + which;
}

}  // namespace perfgate
