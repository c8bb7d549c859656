#include "perfgate/core/cost_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "perfgate/core/run_noise.h"
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

// The variance of log counts a test uses, on its degrees of freedom: this
// run's own launches (both sides' sums of squares), with the pool's where they
// do not scatter significantly more than it says (F test, upper tail, p <
// 0.05: the service's noise has grown since, or is not the pool's): as the
// timed pool joins a young window's own spread (run_noise.cc).
struct LogSpread {
  double var = 0;
  double df = 0;
  const CountNoise* pool = nullptr;  // joined, or nullptr
};

LogSpread log_spread(double own_ss, double own_df, const CountNoise* pool) {
  LogSpread s{own_df > 0 ? own_ss / own_df : 0, own_df, nullptr};
  if (!pool || pool->df < 1 || pool->runs < 1) return s;
  // Launches alike to a part in a million are alike: rounding, not spread.
  double own_var = s.var < 1e-12 ? 0 : s.var;
  double p = 1;
  if (own_df > 0)
    p = pool->log_var > 0 ? stats::f_distribution_sf(own_var / pool->log_var, own_df, pool->df)
                          : (own_var > 0 ? 0.0 : 1.0);
  if (p < 0.05) return s;
  s.df = own_df + pool->df;
  s.var = (own_ss + pool->log_var * pool->df) / s.df;
  s.pool = pool;
  return s;
}

// The change of the geometric means and its t interval on log counts, in %.
ChangeTest count_test(const std::vector<double>& now, const std::vector<double>& base,
                      double level_pct, const std::string& unit, const CountNoise* pool,
                      LogSpread& spread) {
  auto ln = logs(now), lb = logs(base);
  double d = mean(ln) - mean(lb);
  spread = log_spread(sum_squares(ln) + sum_squares(lb),
                      static_cast<double>(ln.size() + lb.size()) - 2, pool);
  double df = spread.df;
  double se = std::sqrt(spread.var * (1.0 / ln.size() + 1.0 / lb.size()));
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
  if (spread.pool)
    t.method += ", with the launch noise of " + std::to_string(spread.pool->runs) +
                " earlier runs (" + df_text(spread.df) + " df in all)";
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
// `spread`: the test's, which a pool of earlier runs' launches may have joined.
void decide(const MetricDef& def, const CostRun& now, double base_launch_spread, bool base_launches,
            const LogSpread& spread_used, MetricCheck& c) {
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
  // So is a pool's: earlier runs' launches, on as many degrees of freedom as
  // four launches a side would give, that these launches do not contradict.
  bool trusted =
      (t.n_now >= kTrustedLaunches && (!base_launches || t.n_base >= kTrustedLaunches)) ||
      (spread_used.pool && spread_used.df >= 2 * (kTrustedLaunches - 1));
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

CountNoisePool pooled_count_noise(std::span<const CostRun> runs) {
  CountNoisePool pool;
  for (const auto& run : runs) {
    for (const auto& def : cost_metric_defs()) {
      auto values = run.values(def.key);
      if (values.size() < 2 ||
          !std::all_of(values.begin(), values.end(), [](double v) { return v > 0; }))
        continue;
      auto& noise = pool[std::string(def.key)];
      // Sums of squares first; the variance from them below.
      noise.log_var += sum_squares(logs(values));
      noise.df += static_cast<double>(values.size()) - 1;
      ++noise.runs;
    }
  }
  for (auto& [key, noise] : pool) noise.log_var /= noise.df;
  return pool;
}

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
    LogSpread spread;
    if (!base.empty()) {
      c.baseline = stats::median(base);
      auto pool = baseline->pool.find(def.key);
      c.test = count_test(values, base, level_pct, baseline->unit,
                          pool == baseline->pool.end() ? nullptr : &pool->second, spread);
      if (*c.baseline != 0) c.change_pct = (c.value - *c.baseline) / *c.baseline * 100;
    }
    if (c.thresholds.max && c.value > *c.thresholds.max) {
      c.verdict = Verdict::kFail;
      c.message = count_text(c.value, def.unit) + " past its max " +
                  count_text(*c.thresholds.max, def.unit);
    } else if (c.test && (c.thresholds.warn_pct || c.thresholds.fail_pct)) {
      bool launches = baseline->unit == "launches";
      decide(def, now, launches ? spread_of(base) : 0.0, launches, spread, c);
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
