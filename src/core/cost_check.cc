#include "perfgate/core/cost_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "perfgate/core/statistics.h"

namespace perfgate {
namespace {

std::string pct_text(double pct, bool sign = true) {
  char buf[48];
  std::snprintf(buf, sizeof buf, sign ? "%+.2f%%" : "%.2f%%", pct);
  return buf;
}

std::string count_text(double value, std::string_view unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f %s/request", value, std::string(unit).c_str());
  return buf;
}

double mean(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

std::vector<double> logs(std::vector<double> v) {
  for (auto& x : v) x = std::log(x);
  return v;
}

double sum_squares(const std::vector<double>& v) {
  double m = mean(v), s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s;
}

std::vector<double> unit_values(const CostBaseline& base, std::string_view metric) {
  std::vector<double> out;
  for (const auto& u : base.units)
    if (auto it = u.find(metric); it != u.end() && it->second > 0) out.push_back(it->second);
  return out;
}

// The change of the geometric means and its t interval on log counts, in %.
ChangeTest count_test(const std::vector<double>& now, const std::vector<double>& base,
                      double level_pct, const std::string& unit) {
  auto ln = logs(now), lb = logs(base);
  double d = mean(ln) - mean(lb);
  double df = static_cast<double>(ln.size() + lb.size()) - 2;
  double pooled = df > 0 ? (sum_squares(ln) + sum_squares(lb)) / df : 0;
  double se = std::sqrt(pooled * (1.0 / ln.size() + 1.0 / lb.size()));
  double q = df > 0 ? stats::student_t_quantile(1 - (1 - level_pct / 100) / 2, df) : 0;
  ChangeTest t;
  t.estimate_pct = std::expm1(d) * 100;
  t.ci_low_pct = std::expm1(d - q * se) * 100;
  t.ci_high_pct = std::expm1(d + q * se) * 100;
  t.p_value = se > 0 ? 2 * (1 - stats::student_t_cdf(std::abs(d) / se, df)) : (d == 0 ? 1 : 0);
  t.significant = t.p_value < 1 - level_pct / 100;
  t.n_now = static_cast<int>(now.size());
  t.n_base = static_cast<int>(base.size());
  t.confidence_pct = level_pct;
  t.unit = unit;
  t.method = se > 0 ? "two-sample t on log counts per launch" : "exact counts (launches agree)";
  // The change this run would fail with 80 % power: past the warn limit by the
  // interval's half-width and the power's share of the standard error.
  double z80 = stats::normal_quantile(kDetectionPower / 100);
  t.detectable_pct = std::expm1((q + z80) * se) * 100;
  return t;
}

// The largest relative difference between two of `values`, in percent.
double spread_of(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  return *lo > 0 ? (*hi - *lo) / *lo * 100 : 0;
}

// `base_launch_spread`: the baseline side's own spread where its units are
// launches (a stored baseline's units are runs, whose spread is the test's).
void decide(const MetricDef& def, const CostRun& now, double base_launch_spread, bool base_launches,
            MetricCheck& c) {
  const ChangeTest& t = *c.test;
  double w = c.thresholds.warn_pct.value_or(0);
  std::optional<double> f = c.thresholds.fail_pct;
  double e = t.estimate_pct, lo = t.ci_low_pct, hi = t.ci_high_pct;
  std::string change =
      std::string(def.key) + " " + pct_text(e) + " (" + pct_text(lo) + ".." + pct_text(hi) + ")";
  // Either side's launches may disagree: two agreeing launches of one side
  // are no exact count when the other side's differ (issue 47).
  double spread = std::max(now.spread_pct(def.key), 0.0);
  double base_spread = base_launch_spread;
  std::string which = base_spread > spread ? "the baseline's" : "one build's";
  spread = std::max(spread, base_spread);
  // Two or three launches a side are too few to trust their spread: a lucky
  // pair agrees. From kTrustedLaunches a side the t interval carries the noise.
  bool trusted = t.n_now >= kTrustedLaunches && (!base_launches || t.n_base >= kTrustedLaunches);
  bool noisy = f && !trusted && spread > *f * kMaxSpreadShareOfFail;
  if (f && e > *f && lo > w) {
    c.verdict = Verdict::kFail;
    c.message = change + " past the fail limit +" + pct_text(*f, false);
  } else if ((c.thresholds.warn_pct && e > w && lo > 0) || (f && e > *f)) {
    c.verdict = Verdict::kWarn;
    c.message = change + " past the warn limit +" + pct_text(w, false);
  } else if (!noisy && (!f || hi <= *f)) {
    c.verdict = Verdict::kPass;
    c.message = change + ", within the limits";
  } else {
    c.verdict = Verdict::kWarn;
    c.inconclusive = true;
    c.message = "inconclusive: " + change + " could not have failed at its limit";
    if (f) c.message += " +" + pct_text(*f, false);
    if (noisy)
      c.message += ": " + which + " launches differ by " + pct_text(spread, false) +
                   ", more than a quarter of the fail limit; counts move only with what the "
                   "service does differently per request: threads (connections > 1, pools), "
                   "timers and periodic work, logging, a JIT, random hash seeds (docs/cost.md)";
    if (int n = launches_to_decide(c)) {
      c.message += "; it would fail changes of " + pct_text(w + *t.detectable_pct, false) +
                   " or more (80% power); about " + std::to_string(n) +
                   " launches a side would decide (this run has " +
                   std::to_string(std::min(t.n_now, t.n_base)) + ")";
    }
  }
}

}  // namespace

int cost_family(const CostRun& now, const CostBaseline* baseline, const ThresholdSet& limits) {
  if (!now.ran() || !baseline || baseline->units.empty()) return 0;
  int family = 0;
  for (const auto& def : cost_metric_defs()) {
    auto it = limits.find(def.key);
    if (it == limits.end() || !(it->second.warn_pct || it->second.fail_pct)) continue;
    if (!now.values(def.key).empty() && !unit_values(*baseline, def.key).empty()) ++family;
  }
  return family;
}

std::vector<MetricCheck> check_costs(const CostRun& now, const CostBaseline* baseline,
                                     const ThresholdSet& limits, double level_pct) {
  std::vector<MetricCheck> checks;
  for (const auto& def : cost_metric_defs()) {
    auto values = now.values(def.key);
    if (values.empty()) continue;
    MetricCheck c;
    c.metric = std::string(def.key);
    c.unit = std::string(def.unit);
    c.value = stats::median(values);
    if (auto it = limits.find(def.key); it != limits.end()) c.thresholds = it->second;
    c.gated = c.thresholds.any();
    auto base = baseline ? unit_values(*baseline, def.key) : std::vector<double>{};
    if (!base.empty()) {
      c.baseline = stats::median(base);
      c.test = count_test(values, base, level_pct, baseline->unit);
      if (*c.baseline != 0) c.change_pct = (c.value - *c.baseline) / *c.baseline * 100;
    }
    if (c.thresholds.max && c.value > *c.thresholds.max) {
      c.verdict = Verdict::kFail;
      c.message = count_text(c.value, def.unit) + " past its max " +
                  count_text(*c.thresholds.max, def.unit);
    } else if (c.test && (c.thresholds.warn_pct || c.thresholds.fail_pct)) {
      bool launches = baseline->unit == "launches";
      decide(def, now, launches ? spread_of(base) : 0.0, launches, c);
    } else {
      c.message = count_text(c.value, def.unit) + " over " + std::to_string(values.size()) +
                  " launches (spread " + pct_text(now.spread_pct(def.key), false) + ")" +
                  (base.empty() ? ", no baseline to compare with" : "");
    }
    checks.push_back(std::move(c));
  }
  return checks;
}

bool count_undecided(const MetricCheck& c) {
  if (!c.gated || !c.test || c.verdict == Verdict::kFail || c.verdict == Verdict::kPass)
    return false;
  return c.inconclusive || (c.thresholds.fail_pct && c.test->ci_high_pct > *c.thresholds.fail_pct);
}

int launches_to_decide(const MetricCheck& c) {
  if (!c.test || !c.test->detectable_pct || *c.test->detectable_pct <= 0) return 0;
  if (!c.thresholds.fail_pct) return 0;
  // An interval narrows with the square root of the launches.
  double w = c.thresholds.warn_pct.value_or(0), f = *c.thresholds.fail_pct;
  double room = std::log1p(f / 100) - std::log1p(w / 100);
  if (room <= 0) return 0;
  double ratio = std::log1p(*c.test->detectable_pct / 100) / room;
  int n = std::min(c.test->n_now, c.test->n_base);
  double wanted = std::ceil(n * ratio * ratio);
  return wanted > 1e6 ? 1'000'000 : static_cast<int>(wanted);
}

void add_cost_checks(Judgement& j, const CostRun& now, const CostBaseline* baseline,
                     const ThresholdSet& limits, int looks) {
  // Counted once, after a sequential run's looks: at the metric's share of the
  // budget, not at a look's level (issue 47: a launch spread of 0.1 % passed
  // A/A 54 % of the time at 99.8 %, 99 % at its share); split over the cost
  // phase's own looks where it may add launches (Bonferroni: each look at half).
  double level = 100 - (100 - j.share_pct) / std::max(looks, 1);
  for (auto& c : check_costs(now, baseline, limits, level)) {
    j.verdict = worst(j.verdict, c.verdict);
    j.checks.push_back(std::move(c));
  }
}

}  // namespace perfgate
